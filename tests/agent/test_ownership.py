"""Whose conversation a turn goes on in, through every door that reaches the agent.

Anna and Bruno are household members; a turn naming a conversation id of
the other's starts a new conversation, and nothing reaches the other's
thread: not its history into the turn, not the turn into the thread.
"""

from datetime import timedelta
from typing import Any

from homeassistant.auth.models import User
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import Context, HomeAssistant
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant.agent.ownership import DATA_OWNERS
from custom_components.desktop_assistant.chat_session import SESSIONS_HAVE_OWNERS
from custom_components.desktop_assistant.const import (
    CONF_RECORD,
    DEFAULT_AGENT_OPTIONS,
)
from custom_components.desktop_assistant.reader import CURATOR
from custom_components.desktop_assistant.record import database
from custom_components.desktop_assistant.runtime import DATA_RECORD
from tests.harness.agent import TEST_API, Agent
from tests.harness.llama_server import MODEL_ID, text_reply
from tests.harness.members import client_of, member

from ..chat.conftest import command, events_until_end, subscribe


@pytest.fixture(autouse=True)
def owner(hass_admin_user: User) -> User:
    """Home Assistant's owner comes first: the members after are no admins."""
    return hass_admin_user


ANNA_SAYS = "Plan the surprise party for Bruno on Friday"


async def conversation_of(hass: HomeAssistant, conversation_id: str) -> Any:
    """The conversation as recorded, once every write is done."""
    await hass.async_block_till_done()
    return await hass.data[DATA_RECORD].async_read(
        lambda db: database.get_conversation(db, conversation_id)
    )


def said_to_model(agent: Agent) -> str:
    """Everything the last request to llama-server carried."""
    return str(agent.server.chat_requests[-1]["messages"])


async def annas_conversation(agent: Agent, anna: User) -> str:
    """Anna's typed conversation, with her secret in it; its id."""
    agent.server.script.append(text_reply("Friday it is."))
    result = await agent.ask(ANNA_SAYS, context=Context(user_id=anna.id))
    return result.conversation_id


async def assert_annas_untouched(
    hass: HomeAssistant, agent: Agent, thread: str
) -> None:
    """Anna's conversation holds only her turn, in the record and in HA's log."""
    recorded = await conversation_of(hass, thread)
    assert [entry.get("text") for entry in recorded["entries"]] == [
        ANNA_SAYS,
        "Friday it is.",
    ]
    assert "Bruno asks" not in str(agent.chat_log(thread))


async def assert_started_anew(
    hass: HomeAssistant, agent: Agent, thread: str, conversation_id: str
) -> None:
    """The turn went on in a conversation of its own: Anna's was neither read nor written."""
    assert conversation_id != thread
    assert "surprise" not in said_to_model(agent)
    await assert_annas_untouched(hass, agent, thread)


async def test_an_id_of_another_member_starts_a_new_conversation(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    """conversation/process, Bruno naming Anna's id: a new conversation of his."""
    anna, bruno = await member(hass, "Anna"), await member(hass, "Bruno")
    thread = await annas_conversation(agent, anna)
    agent.server.script.append(text_reply("Hello Bruno."))
    client = await client_of(hass, hass_ws_client, bruno)
    await client.send_json_auto_id(
        {
            "type": "conversation/process",
            "text": "Bruno asks: what did we say?",
            "agent_id": agent.entity_id,
            "conversation_id": thread,
        }
    )
    reply = await client.receive_json()
    assert reply["success"], reply

    await assert_started_anew(hass, agent, thread, reply["result"]["conversation_id"])
    his = await conversation_of(hass, reply["result"]["conversation_id"])
    assert his["user_id"] == bruno.id


async def test_a_member_goes_on_in_their_own_not_the_households(
    hass: HomeAssistant, agent: Agent
) -> None:
    """The owner continues their conversation; a member naming a household
    one starts their own, so what they type never becomes the household's."""
    anna, bruno = await member(hass, "Anna"), await member(hass, "Bruno")
    thread = await annas_conversation(agent, anna)
    agent.server.script.append(text_reply("Yes."))
    again = await agent.ask("And the cake?", thread, context=Context(user_id=anna.id))
    assert again.conversation_id == thread
    assert "surprise" in said_to_model(agent)

    agent.server.script.append(text_reply("The lights are on."))
    kitchen = (
        await agent.ask("Lights in the kitchen", context=Context())
    ).conversation_id
    agent.server.script.append(text_reply("Still on."))
    his = await agent.ask(
        "Bruno asks: and my doctor's appointment?",
        kitchen,
        context=Context(user_id=bruno.id),
    )
    assert his.conversation_id != kitchen
    household = await conversation_of(hass, kitchen)
    assert household["user_id"] is None
    assert "doctor" not in str(household["entries"])
    assert (await conversation_of(hass, his.conversation_id))["user_id"] == bruno.id


async def test_a_voice_turn_cannot_open_a_members_conversation(
    hass: HomeAssistant, agent: Agent
) -> None:
    """No user (a satellite) naming Anna's id: a new household conversation."""
    thread = await annas_conversation(agent, await member(hass, "Anna"))
    agent.server.script.append(text_reply("Hello."))
    result = await agent.ask("Bruno asks: what did we say?", thread, context=Context())
    await assert_started_anew(hass, agent, thread, result.conversation_id)


async def test_the_pipeline_and_the_action_start_anew_too(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    """The Assist pipeline with text, and the conversation.process action."""
    anna, bruno = await member(hass, "Anna"), await member(hass, "Bruno")
    thread = await annas_conversation(agent, anna)
    assert await async_setup_component(hass, "assist_pipeline", {})
    client = await client_of(hass, hass_ws_client, bruno)
    agent.server.script.append(text_reply("Hello from the pipeline."))
    asked_before = len(agent.server.chat_requests)
    await client.send_json_auto_id(
        {
            "type": "assist_pipeline/run",
            "start_stage": "intent",
            "end_stage": "intent",
            "input": {"text": "Bruno asks: what did we say?"},
            "pipeline": agent.entity_id,
            "conversation_id": thread,
        }
    )
    assert (await client.receive_json())["success"]
    events = []
    while not events or events[-1]["type"] != "run-end":
        events.append((await client.receive_json())["event"])
    if SESSIONS_HAVE_OWNERS:
        # Home Assistant 2026.11's pipeline opens the session itself, with
        # Bruno's context, and refuses him before our agent hears the turn.
        assert [e["type"] for e in events if e["type"] in ("error", "intent-end")] == [
            "error"
        ]
        assert len(agent.server.chat_requests) == asked_before
        agent.server.script.clear()
    else:
        (intent_end,) = [e for e in events if e["type"] == "intent-end"]
        assert intent_end["data"]["intent_output"]["conversation_id"] != thread
        assert "surprise" not in said_to_model(agent)

    agent.server.script.append(text_reply("Hello from the action."))
    response = await hass.services.async_call(
        "conversation",
        "process",
        {
            "text": "Bruno asks: what did we say?",
            "agent_id": agent.entity_id,
            "conversation_id": thread,
        },
        blocking=True,
        return_response=True,
        context=Context(user_id=bruno.id),
    )
    await assert_started_anew(hass, agent, thread, response["conversation_id"])


async def test_a_chat_thread_id_through_conversation_process(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    """Anna's Chat thread (its id is in her page's address) stays hers."""
    anna, bruno = await member(hass, "Anna"), await member(hass, "Bruno")
    annas_page = await client_of(hass, hass_ws_client, anna)
    agent.server.script.append(text_reply("Friday it is."))
    sent = await command(annas_page, "send", agent_id=agent.entity_id, text=ANNA_SAYS)
    thread = sent["result"]["thread_id"]
    await subscribe(annas_page, thread)
    await events_until_end(annas_page)

    agent.server.script.append(text_reply("Hello Bruno."))
    result = await agent.ask(
        "Bruno asks: what did we say?", thread, context=Context(user_id=bruno.id)
    )
    await assert_started_anew(hass, agent, thread, result.conversation_id)
    entries = (await command(annas_page, "get", thread_id=thread))["result"]["entries"]
    assert "Bruno asks" not in str(entries)


@pytest.mark.parametrize("asker", ["admin", "member"])
async def test_the_rule_holds_for_an_administrators_turn(
    hass: HomeAssistant, agent: Agent, hass_admin_user: User, asker: str
) -> None:
    """An admin reads everything in the panel; their turn follows the rule."""
    thread = await annas_conversation(agent, await member(hass, "Anna"))
    user = hass_admin_user if asker == "admin" else await member(hass, "Bruno")
    agent.server.script.append(text_reply("Hello."))
    result = await agent.ask(
        "What did we say?", thread, context=Context(user_id=user.id)
    )
    assert result.conversation_id != thread
    assert "surprise" not in said_to_model(agent)
    await hass.async_block_till_done()
    listed, _ = await hass.data[DATA_RECORD].async_read(
        lambda db: database.list_conversations(db, reader=CURATOR, limit=10)
    )
    assert {c["conversation_id"] for c in listed} == {thread, result.conversation_id}


@pytest.mark.parametrize(
    "agent_options",
    [
        DEFAULT_AGENT_OPTIONS
        | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [TEST_API], CONF_RECORD: False}
    ],
)
async def test_an_agent_keeping_no_record_keeps_conversations_apart(
    hass: HomeAssistant, agent: Agent
) -> None:
    """A conversation the record does not hold is known while HA holds it."""
    anna, bruno = await member(hass, "Anna"), await member(hass, "Bruno")
    thread = await annas_conversation(agent, anna)
    assert await conversation_of(hass, thread) is None
    agent.server.script.append(text_reply("Hello."))
    result = await agent.ask("What?", thread, context=Context(user_id=bruno.id))
    assert result.conversation_id != thread
    assert "surprise" not in said_to_model(agent)
    assert "What?" not in str(agent.chat_log(thread))


async def test_a_conversation_home_assistant_forgot_stays_its_owners(
    hass: HomeAssistant, agent: Agent
) -> None:
    """Anna's own id (not a ULID, kept by HA), named after HA forgot it: the record says whose."""
    anna, bruno = await member(hass, "Anna"), await member(hass, "Bruno")
    agent.server.script.append(text_reply("Friday it is."))
    thread = (
        await agent.ask(ANNA_SAYS, "anna-notes", context=Context(user_id=anna.id))
    ).conversation_id
    assert thread == "anna-notes"
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=6))
    await hass.async_block_till_done()
    assert thread not in hass.data[DATA_OWNERS]

    agent.server.script.append(text_reply("Hello Bruno."))
    result = await agent.ask(
        "Bruno asks: what did we say?", thread, context=Context(user_id=bruno.id)
    )
    await assert_started_anew(hass, agent, thread, result.conversation_id)
