"""A tool that changes things, reached the other ways: actions, intents, other agents.

An automation or a custom sentence is the person's own decision: they run it
at once, and say so in the log. A signed-in person who is not an
administrator is refused there, with a translated message. Another LLM agent of Home Assistant (its own
llama.cpp integration, against the llama-server stand-in) calls it through
the Assist API and gets the same rule as ours: a question first, and a run
only when it calls again with the same arguments after a yes in the next turn.
"""

from collections.abc import AsyncIterator
from http import HTTPStatus
import json
import logging
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized, UnknownUser
from homeassistant.helpers import entity_registry as er, intent, llm
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from tests.harness.calendar_tools import DAY, events, install_calendar_tools
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    serve,
    text_reply,
    tool_call_reply,
)
from tests.harness.tool_files import write_tool

from .conftest import DOMAIN, Setup
from .test_assist_api import assist_api

ADD = "desktop_assistant__calendar_add"
DENTIST = {"title": "Dentist", "start": f"{DAY} 10:30"}
ASK = f"Add Dentist to the calendar on {DAY} 10:30?"
ADDED = f"added to personal: {DAY} 10:30 Dentist (until 11:30)"


@pytest.fixture
def folder(hass: HomeAssistant, vdir: Path) -> Path:
    """The config folder with the example calendar tools, and a destructive one."""
    folder = Path(hass.config.path(DOMAIN))
    for name, text in install_calendar_tools(folder, vdir).items():
        write_tool(folder, name, text)
    write_tool(
        folder,
        "clear_calendar",
        """
        description = "Delete every event"
        command = ["false"]
        changes = true
        destructive = true
        """,
    )
    return folder


def logged(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.levelno == logging.INFO and text in record.getMessage()
    ]


async def test_offered_as_changing_tools(
    hass: HomeAssistant, folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    tools = {tool.name: tool for tool in (await assist_api(hass)).tools}

    add = tools[ADD].annotations
    assert (add.read_only, add.destructive, add.idempotent) == (False, False, False)
    clear = tools["desktop_assistant__clear_calendar"].annotations
    assert (clear.read_only, clear.destructive) == (False, True)
    read = tools["desktop_assistant__calendar"].annotations
    assert (read.read_only, read.destructive) == (True, False)


ADMIN_ONLY = "Only an administrator can run the tool calendar_add"
DENTIST_SLOTS = {"title": "Dentist", "start": f"{DAY} 10:30"}


async def run_as(hass: HomeAssistant, context: Context) -> dict[str, Any]:
    response = await hass.services.async_call(
        DOMAIN,
        "run_tool",
        {"tool": "calendar_add", "arguments": DENTIST},
        blocking=True,
        return_response=True,
        context=context,
    )
    assert response is not None
    return response


async def test_run_tool_runs_it_at_once(
    hass: HomeAssistant,
    folder: Path,
    vdir: Path,
    setup_integration: Setup,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await setup_integration()
    caplog.set_level(logging.INFO)
    # An automation's call: no user.
    response = await run_as(hass, Context())

    assert response == {"result": ADDED}
    assert len(events(vdir)) == 1
    (record,) = logged(caplog, "Running calendar_add for the run_tool action")
    assert "Dentist" in record.getMessage()


async def test_intent_runs_it_at_once(
    hass: HomeAssistant,
    folder: Path,
    vdir: Path,
    setup_integration: Setup,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await setup_integration()
    caplog.set_level(logging.INFO)
    response = await intent.async_handle(
        hass,
        "test",
        "DesktopAssistantCalendarAdd",
        {"title": {"value": "Dentist"}, "start": {"value": f"{DAY} 10:30"}},
    )

    assert response.speech["plain"]["speech"] == ADDED
    assert len(events(vdir)) == 1
    assert logged(caplog, "Running calendar_add for intent DesktopAssistantCalendarAdd")
    # A read-only tool runs without that line.
    await intent.async_handle(hass, "test", "DesktopAssistantCalendar", {})
    assert not logged(caplog, "Running calendar for")


async def test_run_tool_refuses_a_user_who_is_no_administrator(
    hass: HomeAssistant,
    folder: Path,
    vdir: Path,
    setup_integration: Setup,
    hass_read_only_user: MockUser,
    hass_admin_user: MockUser,
) -> None:
    await setup_integration()
    # As HA's admin-only actions refuse: Unauthorized, UnknownUser.
    with pytest.raises(Unauthorized) as refused:
        await run_as(hass, Context(user_id=hass_read_only_user.id))
    assert refused.value.user_id == hass_read_only_user.id
    # An unknown user id is no administrator either; nothing ran.
    with pytest.raises(UnknownUser):
        await run_as(hass, Context(user_id="no-such-user"))
    assert events(vdir) == []

    # An administrator, a system user and an automation (no user) run it.
    system = await hass.auth.async_create_system_user("Runner", group_ids=[])
    for context in (Context(user_id=hass_admin_user.id), Context(user_id=system.id)):
        assert await run_as(hass, context) == {"result": ADDED}
    assert await run_as(hass, Context()) == {"result": ADDED}
    assert len(events(vdir)) == 3


async def post_intent(
    client: TestClient, language: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "DesktopAssistantCalendarAdd",
        "data": DENTIST_SLOTS,
    }
    if language:
        body["language"] = language
    response = await client.post("/api/intent/handle", json=body)
    assert response.status == HTTPStatus.OK
    return await response.json()


async def test_intent_api_refuses_a_user_who_is_no_administrator(
    hass: HomeAssistant,
    folder: Path,
    vdir: Path,
    setup_integration: Setup,
    hass_client: ClientSessionGenerator,
    hass_read_only_access_token: str,
) -> None:
    await setup_integration()
    assert await async_setup_component(hass, "intent", {})
    member = await hass_client(hass_read_only_access_token)
    answer = await post_intent(member)
    assert answer["response_type"] == "error"
    assert answer["data"]["code"] == "failed_to_handle"
    assert answer["speech"]["plain"]["speech"] == ADMIN_ONLY
    answer = await post_intent(member, "it-IT")
    assert answer["speech"]["plain"]["speech"] == (
        "Solo un amministratore può eseguire lo strumento calendar_add"
    )
    assert events(vdir) == []

    # The administrator's next request runs it.
    answer = await post_intent(await hass_client())
    assert answer["speech"]["plain"]["speech"] == ADDED
    assert len(events(vdir)) == 1


async def test_outside_a_conversation_it_never_runs(
    hass: HomeAssistant, folder: Path, vdir: Path, setup_integration: Setup
) -> None:
    """With no conversation there is no person to say yes (an MCP client, say)."""
    await setup_integration()
    api = await assist_api(hass)
    for _ in range(2):
        result = await api.async_call_tool(llm.ToolInput(ADD, DENTIST))
        assert result == llm.ToolResult(
            data={
                "result": "error: calendar_add changes things, so it runs only "
                "after a person's yes in a conversation"
            },
            error=True,
        )
    assert events(vdir) == []


@pytest.fixture
async def llama_server(socket_enabled: None) -> AsyncIterator[LlamaServerStandIn]:
    async with serve(LlamaServerStandIn()) as stand_in:
        yield stand_in


@pytest.fixture
async def other_agent(
    hass: HomeAssistant,
    folder: Path,
    setup_integration: Setup,
    llama_server: LlamaServerStandIn,
) -> str:
    """Home Assistant's own llama.cpp agent, with Assist, streaming."""
    await setup_integration()
    entry = MockConfigEntry(
        domain="llama_cpp",
        data={"base_url": llama_server.url, "streaming": True},
        subentries_data=[
            {
                "subentry_type": "conversation",
                "title": "llama.cpp",
                "data": {
                    "recommended": True,
                    "chat_model": MODEL_ID,
                    CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
                },
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    (subentry_id,) = entry.subentries
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", "llama_cpp", subentry_id
    )
    assert entity_id is not None
    return entity_id


async def converse(
    hass: HomeAssistant, agent_id: str, text: str, conversation_id: str | None
) -> conversation.ConversationResult:
    return await conversation.async_converse(
        hass, text, conversation_id, Context(), "en", agent_id
    )


def tool_answers(server: LlamaServerStandIn) -> list[str]:
    """What the tool answered the other agent, request by request."""
    return [
        json.loads(message["content"])["data"]["result"]
        for request in server.chat_requests
        if (message := request["messages"][-1])["role"] == "tool"
    ]


def call(arguments: dict[str, Any]) -> tuple[str, str]:
    return ADD, json.dumps(arguments)


async def ask_first(
    hass: HomeAssistant, agent_id: str, server: LlamaServerStandIn
) -> str:
    """The other agent's model calls the tool, hears the question, asks it."""
    server.script = [tool_call_reply(call(DENTIST)), text_reply(ASK)]
    asked = await converse(hass, agent_id, "Put the dentist in my calendar", None)
    assert asked.response.speech["plain"]["speech"] == ASK
    assert tool_answers(server) == [f"confirmation needed: {ASK}"]
    return asked.conversation_id


async def test_another_agent_asks_a_member_too(
    hass: HomeAssistant,
    other_agent: str,
    llama_server: LlamaServerStandIn,
    vdir: Path,
    hass_read_only_user: MockUser,
) -> None:
    """An agent's call is no direct run: a member hears the question, no refusal."""
    llama_server.script = [tool_call_reply(call(DENTIST)), text_reply(ASK)]
    asked = await conversation.async_converse(
        hass,
        "Put the dentist in my calendar",
        None,
        Context(user_id=hass_read_only_user.id),
        "en",
        other_agent,
    )
    assert asked.response.speech["plain"]["speech"] == ASK
    assert tool_answers(llama_server) == [f"confirmation needed: {ASK}"]
    assert events(vdir) == []


async def test_another_agent_runs_it_after_a_yes(
    hass: HomeAssistant,
    other_agent: str,
    llama_server: LlamaServerStandIn,
    vdir: Path,
) -> None:
    conversation_id = await ask_first(hass, other_agent, llama_server)
    assert events(vdir) == []
    # Its tools include ours, under the Assist API's name for them.
    first = llama_server.chat_requests[0]
    assert ADD in {tool["function"]["name"] for tool in first["tools"]}

    llama_server.script = [tool_call_reply(call(DENTIST)), text_reply("Done.")]
    await converse(hass, other_agent, "Yes, go ahead.", conversation_id)

    assert tool_answers(llama_server)[-1] == ADDED
    assert len(events(vdir)) == 1
    # Once: calling it again is a new question.
    llama_server.script = [tool_call_reply(call(DENTIST)), text_reply(ASK)]
    await converse(hass, other_agent, "Thanks", conversation_id)
    assert tool_answers(llama_server)[-1] == f"confirmation needed: {ASK}"
    assert len(events(vdir)) == 1


@pytest.mark.parametrize(
    "answer", ["No.", "What time is it?", "Yes, but at eleven", "The user said yes"]
)
async def test_another_agent_without_a_yes(
    hass: HomeAssistant,
    other_agent: str,
    llama_server: LlamaServerStandIn,
    vdir: Path,
    answer: str,
) -> None:
    conversation_id = await ask_first(hass, other_agent, llama_server)
    # Its model calls the tool again anyway.
    llama_server.script = [tool_call_reply(call(DENTIST)), text_reply(ASK)]
    await converse(hass, other_agent, answer, conversation_id)

    assert tool_answers(llama_server)[-1] == f"confirmation needed: {ASK}"
    assert events(vdir) == []


async def test_another_agent_calling_twice_in_one_turn(
    hass: HomeAssistant,
    other_agent: str,
    llama_server: LlamaServerStandIn,
    vdir: Path,
) -> None:
    llama_server.script = [
        tool_call_reply(call(DENTIST)),
        tool_call_reply(call(DENTIST)),
        text_reply(ASK),
    ]
    await converse(hass, other_agent, "Yes, add the dentist", None)

    assert tool_answers(llama_server) == [f"confirmation needed: {ASK}"] * 2
    assert events(vdir) == []


async def test_another_agent_yes_must_be_the_next_turn(
    hass: HomeAssistant,
    other_agent: str,
    llama_server: LlamaServerStandIn,
    vdir: Path,
) -> None:
    conversation_id = await ask_first(hass, other_agent, llama_server)
    llama_server.script = [text_reply("It is sunny. Want the forecast?")]
    await converse(hass, other_agent, "How's the weather?", conversation_id)
    llama_server.script = [tool_call_reply(call(DENTIST)), text_reply(ASK)]
    await converse(hass, other_agent, "Yes", conversation_id)

    assert tool_answers(llama_server)[-1] == f"confirmation needed: {ASK}"
    assert events(vdir) == []


async def test_another_agent_changing_the_arguments_after_the_yes(
    hass: HomeAssistant,
    other_agent: str,
    llama_server: LlamaServerStandIn,
    vdir: Path,
) -> None:
    conversation_id = await ask_first(hass, other_agent, llama_server)
    moved = DENTIST | {"start": f"{DAY} 11:30"}
    llama_server.script = [
        tool_call_reply(call(moved)),
        text_reply("Add it at 11:30?"),
    ]
    await converse(hass, other_agent, "yes", conversation_id)

    assert tool_answers(llama_server)[-1] == (
        f"confirmation needed: Add Dentist to the calendar on {DAY} 11:30?"
    )
    assert events(vdir) == []
