"""Fixtures and helpers for tests of the conversation record."""

from typing import Any

from homeassistant.core import HomeAssistant

from custom_components.desktop_assistant.record import DATA_RECORD, Record, database

from ..integration.conftest import (  # noqa: F401 (fixtures)
    agent,
    agent_options,
    custom_integrations,
    llama_server,
    tool_files,
)


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
        lambda db: database.list_conversations(db, limit=1000, **filters)
    )
    return conversations


def kinds(conversation: dict[str, Any]) -> list[str]:
    """The kinds of a conversation's entries, in order."""
    return [entry["kind"] for entry in conversation["entries"]]
