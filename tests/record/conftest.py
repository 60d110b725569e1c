"""Fixtures and helpers for tests of the conversation record."""

from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.reader import CURATOR
from custom_components.desktop_assistant.record import Record, database
from custom_components.desktop_assistant.record.models import (
    ConversationStart,
    Entry,
    TurnWrite,
)
from custom_components.desktop_assistant.record.search import match_expression
from custom_components.desktop_assistant.runtime import DATA_RECORD
from custom_components.desktop_assistant.text import words


def record_of(hass: HomeAssistant) -> Record:
    """The integration's record."""
    return hass.data[DATA_RECORD]


async def stored(hass: HomeAssistant, conversation_id: str) -> dict[str, Any] | None:
    """A conversation as recorded, once every pending write is done."""
    await hass.async_block_till_done()
    return await record_of(hass).async_read(
        lambda db: database.get_conversation(db, conversation_id)
    )


async def listed(hass: HomeAssistant, **filters: Any) -> list[dict[str, Any]]:
    """Every recorded conversation matching the filters, newest first."""
    await hass.async_block_till_done()
    conversations, _ = await record_of(hass).async_read(
        lambda db: database.list_conversations(
            db, reader=CURATOR, limit=1000, **filters
        )
    )
    return conversations


def kinds(conversation: dict[str, Any]) -> list[str]:
    """The kinds of a conversation's entries, in order."""
    return [entry["kind"] for entry in conversation["entries"]]


async def seed(
    hass: HomeAssistant,
    conversation_id: str,
    at: float,
    *said: str,
    channel: str = "text",
    device: tuple[str, str] | None = None,
    config_entry_id: str | None = None,
    tool_call: tuple[str, dict[str, Any], str] | None = None,
    user_id: str | None = None,
) -> None:
    """Record a conversation as the agent would: the person, then the replies.

    `said` alternates the person and the assistant; every entry is at `at`
    (seconds since the epoch). A tool call (name, arguments, result) follows
    the first thing said. `user_id` is whose it is (None: the household's).
    """
    entries = [
        Entry(
            kind="user" if index % 2 == 0 else "assistant",
            at=at,
            text=text,
            source=("speech" if channel == "voice" else "text")
            if index % 2 == 0
            else None,
        )
        for index, text in enumerate(said)
    ]
    if tool_call is not None:
        name, arguments, result = tool_call
        entries.insert(
            1,
            Entry(
                kind="tool_call",
                at=at,
                tool_name=name,
                tool_arguments=arguments,
                tool_result=result,
                tool_error=False,
            ),
        )
    record_of(hass).async_enqueue_turn(
        TurnWrite(
            ConversationStart(
                conversation_id=conversation_id,
                agent_id="conversation.seeded",
                config_entry_id=config_entry_id,
                channel=channel,  # type: ignore[arg-type]
                device_id=device[0] if device else None,
                device_name=device[1] if device else None,
                language="en",
                user_id=user_id,
            ),
            at,
            entries,
        )
    )
    await hass.async_block_till_done()


@pytest.fixture
async def record(hass: HomeAssistant) -> Record:
    """The integration set up without a server: its record, open."""
    assert await async_setup_component(hass, DOMAIN, {})
    found = record_of(hass)
    assert found.available
    return found


async def search(hass: HomeAssistant, *query: str) -> list[str]:
    """Ids of the conversations the index finds with all the words."""
    return [
        found["conversation_id"]
        for found in await listed(hass, match=match_expression(words(" ".join(query))))
    ]


async def index_rows(hass: HomeAssistant, word: str) -> int:
    """How many rows of the search index hold the word."""
    return await record_of(hass).async_read(
        lambda db: db.execute(
            "SELECT count(*) FROM conversation_search WHERE conversation_search"
            " MATCH ?",
            (f'"{word}"',),
        ).fetchone()[0]
    )
