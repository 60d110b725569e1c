"""A locked or corrupt database never stops an answer; transcripts stay private."""

import asyncio
import json
import logging
from pathlib import Path
import sqlite3

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.record import RECALL_TOOL
from custom_components.desktop_assistant.store import DB_FILE, in_order
from tests.harness.agent import Agent, speech
from tests.harness.llama_server import text_reply

from .conftest import record_of, stored

SECRET_QUESTION = "Where did I hide the spare key for the shed?"


def has_issue(hass: HomeAssistant, issue_id: str) -> bool:
    return ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None


@pytest.fixture
def corrupt_database(hass: HomeAssistant) -> None:
    """assistant.db is not a database when Home Assistant starts."""
    path = Path(hass.config.path(DOMAIN, DB_FILE))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00garbage" * 1000)


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
    for _ in range(100):  # the first try waits out SQLite's busy timeout
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
