"""Whose each recorded conversation is, and who reads it through the record's doors.

Anna and Bruno are household members, a satellite is the household: the
recall_conversations tool reads the asker's and the household's; the panel
(administrators) reads everyone's, shows whose each is and filters by it.
"""

import json
from typing import Any

from homeassistant.auth.models import User
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import Context, HomeAssistant
import pytest

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from custom_components.desktop_assistant.record import RECALL_TOOL
from tests.harness.agent import Agent
from tests.harness.llama_server import MODEL_ID, text_reply, tool_call_reply
from tests.harness.members import client_of, member
from tests.harness.schema import database_before, migrate_to_latest

PARTY: dict[str | None, str] = {
    "anna": "The surprise party for Bruno is on Friday at eight",
    "bruno": "My surprise party idea is a chocolate cake",
    None: "Surprise party balloons are in the kitchen drawer",
}

WITH_RECALL = pytest.mark.parametrize(
    "agent_options",
    [DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]}],
)


async def said_by_each(agent: Agent, users: dict[str, User]) -> None:
    """Anna, Bruno and the household (no user) each say their PARTY line."""
    for who, text in PARTY.items():
        agent.server.script.append(text_reply("Noted."))
        user_id = users[who].id if who else None
        await agent.ask(text, context=Context(user_id=user_id))
    await agent.hass.async_block_till_done()


async def recalled(agent: Agent, user_id: str | None) -> str:
    """What recall_conversations answered a turn of `user_id` about the party."""
    agent.server.script += [
        tool_call_reply((RECALL_TOOL, '{"query": "surprise party"}')),
        text_reply("Here is what I found."),
    ]
    await agent.ask("What about the surprise party?", context=Context(user_id=user_id))
    answer = agent.server.chat_requests[-1]["messages"][-1]["content"]
    return json.dumps(json.loads(answer), ensure_ascii=False)


@WITH_RECALL
async def test_recall_reads_the_askers_and_the_households_only(
    hass: HomeAssistant, agent: Agent, hass_admin_user: User
) -> None:
    users = {"anna": await member(hass, "Anna"), "bruno": await member(hass, "Bruno")}
    await said_by_each(agent, users)

    bruno_reads = await recalled(agent, users["bruno"].id)
    assert "chocolate" in bruno_reads and "balloons" in bruno_reads
    assert "Friday" not in bruno_reads

    anna_reads = await recalled(agent, users["anna"].id)
    assert "Friday" in anna_reads and "balloons" in anna_reads
    assert "chocolate" not in anna_reads

    voice_reads = await recalled(agent, None)
    assert "balloons" in voice_reads
    assert "Friday" not in voice_reads and "chocolate" not in voice_reads

    # An administrator's turn follows the same rule as anyone's.
    admin_reads = await recalled(agent, hass_admin_user.id)
    assert "balloons" in admin_reads
    assert "Friday" not in admin_reads and "chocolate" not in admin_reads


async def listed(client: Any, **filters: Any) -> dict[str, Any]:
    await client.send_json_auto_id({"type": f"{DOMAIN}/conversations/list", **filters})
    return await client.receive_json()


async def test_the_panel_shows_whose_each_is_and_filters_by_person(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    users = {"anna": await member(hass, "Anna"), "bruno": await member(hass, "Bruno")}
    await said_by_each(agent, users)
    admin = await hass_ws_client(hass)

    everyone = (await listed(admin))["result"]["conversations"]
    owners = {c["first_words"]: c["user_id"] for c in everyone}
    assert owners == {
        PARTY["anna"]: users["anna"].id,
        PARTY["bruno"]: users["bruno"].id,
        PARTY[None]: None,
    }
    annas = (await listed(admin, owner=users["anna"].id))["result"]["conversations"]
    assert [c["first_words"] for c in annas] == [PARTY["anna"]]
    household = (await listed(admin, owner="household"))["result"]["conversations"]
    assert [c["first_words"] for c in household] == [PARTY[None]]
    await admin.send_json_auto_id({"type": f"{DOMAIN}/panel/describe"})
    members = (await admin.receive_json())["result"]["members"]
    assert {"user_id": users["anna"].id, "name": "Anna"} in members
    # A user id nobody has finds nothing; it is no way around the rule.
    for forged_owner in ("0" * 32, "' OR 1=1 --", "%"):
        forged = await listed(admin, owner=forged_owner)
        assert forged["result"]["conversations"] == []

    # The panel is an administrator's: a member gets none of it.
    members_client = await client_of(hass, hass_ws_client, users["bruno"])
    refused = await listed(members_client)
    assert refused["error"]["code"] == "unauthorized"


def test_conversations_recorded_before_are_the_households_but_chat_threads() -> None:
    """Migrations 11 and 12 on a record with conversations and a Chat thread.

    Each conversation stays; the thread's is its owner's, the rest the
    household's.
    """
    connection = database_before(
        11,
        "INSERT INTO conversations (conversation_id, agent_id, channel, started_at,"
        " last_activity_at, activity) VALUES ('voice', 'conversation.a', 'voice',"
        " 1, 2, 1), ('chat-1', 'conversation.a', 'text', 1, 2, 2);"
        "INSERT INTO chat_threads VALUES ('chat-1', 'anna', 'conversation.a',"
        " 'Party', 1, 2);",
    )
    migrate_to_latest(connection)
    assert connection.execute(
        "SELECT conversation_id, user_id FROM conversations ORDER BY id"
    ).fetchall() == [("voice", None), ("chat-1", "anna")]
