"""A locked or corrupt database never stops an answer; transcripts stay private."""

import asyncio
from collections.abc import Iterator
import json
import logging
from pathlib import Path
import sqlite3
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.record import RECALL_TOOL, Record
from custom_components.desktop_assistant.record.models import (
    ConversationStart,
    Entry,
    TurnWrite,
)
from custom_components.desktop_assistant.store import DB_FILE, in_order
from custom_components.desktop_assistant.store.store import REOPEN_DELAY
from tests.harness.agent import Agent, speech
from tests.harness.llama_server import text_reply, tool_call_reply

from .conftest import record_of, seed, stored

SECRET_QUESTION = "Where did I hide the spare key for the shed?"


def has_issue(hass: HomeAssistant, issue_id: str) -> bool:
    return ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None


@pytest.fixture
def corrupt_database(hass: HomeAssistant) -> None:
    """assistant.db is not a database when Home Assistant starts."""
    path = Path(hass.config.path(DOMAIN, DB_FILE))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00garbage" * 1000)


@pytest.fixture
def locked_at_start(hass: HomeAssistant) -> Iterator[sqlite3.Connection]:
    """Another program holds assistant.db's lock when Home Assistant starts."""
    path = Path(hass.config.path(DOMAIN, DB_FILE))
    path.parent.mkdir(parents=True, exist_ok=True)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()


@pytest.mark.freeze_time("2026-11-20 20:00:00+00:00")  # noon in the tests' zone
async def test_a_database_locked_at_start_is_used_once_it_is_free(
    hass: HomeAssistant,
    locked_at_start: sqlite3.Connection,
    agent: Agent,
    freezer: Any,
) -> None:
    assert has_issue(hass, "database_locked")
    assert not record_of(hass).available
    assert hass.states.get("sensor.household_profile_size") is None

    locked_at_start.execute("ROLLBACK")
    freezer.tick(REOPEN_DELAY + 1)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert record_of(hass).available
    assert not has_issue(hass, "database_locked")
    # The entry was reloaded: memory's sensor is there, the record records.
    assert hass.states.get("sensor.household_profile_size") is not None
    agent.server.script = [text_reply("Under the flowerpot.")]
    result = await agent.ask(SECRET_QUESTION)
    found = await stored(hass, result.conversation_id)
    assert [e.get("text") for e in found["entries"]] == [
        SECRET_QUESTION,
        "Under the flowerpot.",
    ]


async def test_a_corrupt_database_the_agent_still_answers(
    hass: HomeAssistant, corrupt_database: None, agent: Agent
) -> None:
    assert has_issue(hass, "database_corrupt")
    assert not record_of(hass).available
    agent.server.script = [text_reply("Under the flowerpot.")]
    result = await agent.ask(SECRET_QUESTION)
    assert speech(result) == "Under the flowerpot."
    # Nothing to recall from, so the tool is not offered.
    offered = [
        t["function"]["name"] for t in agent.server.chat_requests[0].get("tools", [])
    ]
    assert RECALL_TOOL not in offered


async def test_a_locked_database_the_agent_answers_and_the_entry_is_retried(
    hass: HomeAssistant, agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    other = sqlite3.connect(hass.config.path(DOMAIN, DB_FILE), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    agent.server.script = [text_reply("Under the flowerpot.")]

    result = await agent.ask(SECRET_QUESTION)

    assert speech(result) == "Under the flowerpot."
    for _ in range(300):  # the first try waits out SQLite's busy timeout
        if has_issue(hass, "database_locked"):
            break
        await asyncio.sleep(0.1)
    assert has_issue(hass, "database_locked")
    other.execute("ROLLBACK")
    other.close()

    found = await stored(hass, result.conversation_id)
    assert [e.get("text") for e in found["entries"]] == [
        SECRET_QUESTION,
        "Under the flowerpot.",
    ]
    assert not has_issue(hass, "database_locked")
    assert "database is locked" in caplog.text
    above_debug = [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG]
    assert not [m for m in above_debug if "spare key" in m or "flowerpot" in m]


async def test_diagnostics_count_conversations_without_their_text(
    hass: HomeAssistant, hass_client: ClientSessionGenerator, agent: Agent
) -> None:
    assert await async_setup_component(hass, "diagnostics", {})
    agent.server.script = [text_reply("Under the flowerpot.")]
    await agent.ask(SECRET_QUESTION)
    await hass.async_block_till_done()
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, agent.entry)
    assert diagnostics["record"] == {
        "available": True,
        "conversations": 1,
        "entries": 2,
        "schema_version": in_order(SCHEMAS)[-1].version,
    }
    text = json.dumps(diagnostics)
    assert "spare key" not in text
    assert "flowerpot" not in text


async def test_a_lone_surrogate_from_the_model_is_stored_replaced(
    hass: HomeAssistant, agent: Agent
) -> None:
    # The stand-in writes JSON as llama-server does: "\ud800" as an escape,
    # an emoji as a whole pair of escapes, which stays an emoji.
    agent.server.script = [
        tool_call_reply(("weather", '{"place": "Rome\\ud800"}')),
        text_reply("Sunny in Rome\ud800 today \U0001f600."),
    ]
    result = await agent.ask("Weather in Rome?")
    assert speech(result) == "Sunny in Rome\ufffd today \U0001f600."
    assert agent.weather.calls == [{"place": "Rome\ufffd"}]

    found = await stored(hass, result.conversation_id)
    assert found is not None
    user, call, reply = found["entries"]
    assert user["text"] == "Weather in Rome?"
    assert call["arguments"] == {"place": "Rome\ufffd"}
    assert reply["text"] == "Sunny in Rome\ufffd today \U0001f600."
    # The writer lives on: the next turn is recorded too.
    agent.server.script = [text_reply("It is 14:05.")]
    following = await agent.ask("And the time?", result.conversation_id)
    assert [
        e.get("text")
        for e in (await stored(hass, following.conversation_id))["entries"]
    ][-1] == "It is 14:05."


def turn(conversation_id: str, at: float, entry: Entry) -> TurnWrite:
    start = ConversationStart(
        conversation_id=conversation_id,
        agent_id="conversation.test",
        config_entry_id=None,
        channel="text",
        device_id=None,
        device_name=None,
        language="en",
    )
    return TurnWrite(start, at, [entry])


async def test_a_turn_the_store_refuses_keeps_those_batched_with_it(
    hass: HomeAssistant, record: Record, caplog: pytest.LogCaptureFixture
) -> None:
    at = dt_util.utcnow().timestamp()
    # Queued together, so written in one transaction: a 5000-digit number
    # in a tool call's arguments cannot be written as JSON.
    record.async_enqueue_turn(
        turn("before", at, Entry(kind="user", at=at, text="First \ud800"))
    )
    record.async_enqueue_turn(
        turn(
            "broken",
            at,
            Entry(
                kind="tool_call", at=at, tool_name="n", tool_arguments={"n": 10**5000}
            ),
        )
    )
    record.async_enqueue_turn(
        turn("after", at, Entry(kind="user", at=at, text="Third"))
    )
    await hass.async_block_till_done()

    assert (await stored(hass, "before"))["entries"][0]["text"] == "First \ufffd"
    assert (await stored(hass, "after"))["entries"][0]["text"] == "Third"
    assert await stored(hass, "broken") is None
    assert "entries of conversation broken failed" in caplog.text
    # The queue still works.
    await seed(hass, "later", at, "Fourth")
    assert (await stored(hass, "later"))["entries"][0]["text"] == "Fourth"
