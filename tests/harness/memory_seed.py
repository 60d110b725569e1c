"""Putting conversations into the record and pages into memory, for tests and evals.

`nightly_runs` reads the nightly runs back as the Nightly page lists them.
"""

from dataclasses import dataclass
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers.dispatcher import async_dispatcher_send

from custom_components.desktop_assistant.memory import pages
from custom_components.desktop_assistant.memory.page_reads import Page, profile_page
from custom_components.desktop_assistant.record import database
from custom_components.desktop_assistant.record.conversation_record import SIGNAL_QUIET
from custom_components.desktop_assistant.record.models import (
    ConversationStart,
    Entry,
    TurnWrite,
)
from custom_components.desktop_assistant.runtime import (
    DATA_MEMORY,
    DATA_NIGHTLY_JOB,
    DATA_RECORD,
)


@dataclass
class Said:
    """One entry of a synthetic conversation."""

    kind: str
    text: str | None = None
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None
    result: str | None = None


def said(item: dict[str, Any]) -> Said:
    """Read an entry of a fixture file."""
    return Said(
        item["kind"],
        item.get("text"),
        item.get("tool_name"),
        item.get("arguments"),
        item.get("result"),
    )


async def add_conversation(
    hass: HomeAssistant,
    conversation_id: str,
    entries: list[Said],
    at: float,
    *,
    device_name: str | None = None,
    language: str = "en",
    quiet: bool = True,
    user_id: str | None = None,
) -> None:
    """Record a conversation's turn through the record, and let it go quiet.

    `user_id` is whose it is (a member typed it); None: the household's.

    Going quiet is told as the record tells it (its quiet signal), and the
    memory's queue has taken it when this returns.
    """
    record = hass.data[DATA_RECORD]
    write = TurnWrite(
        ConversationStart(
            conversation_id,
            "conversation.test",
            None,
            "voice" if device_name else "text",
            "device-1" if device_name else None,
            device_name,
            language,
            user_id,
        ),
        at,
        [
            Entry(
                item.kind,  # type: ignore[arg-type]
                at,
                text=item.text,
                source="speech" if device_name else "text",
                tool_name=item.tool_name,
                tool_arguments=item.arguments,
                tool_result=item.result,
                tool_error=False if item.kind == "tool_call" else None,
            )
            for item in entries
        ],
    )
    await record.async_run_write(
        lambda connection: database.append_turns(connection, [write]), "test turn"
    )
    if quiet:
        await record.async_run_write(
            lambda connection: database.mark_quiet(
                connection, [(conversation_id, at)], at + 1800
            ),
            "test quiet",
        )
        async_dispatcher_send(hass, SIGNAL_QUIET, conversation_id)
        await hass.async_block_till_done()


async def add_page(
    hass: HomeAssistant,
    name: str,
    text: str,
    kind: str = "person",
    aliases: list[str] | None = None,
) -> Page:
    """Create a page as a person would in the panel."""
    memory = hass.data[DATA_MEMORY]
    if kind == "profile":

        def profile(connection, now):
            page = profile_page(connection)
            if page is None:
                pages.remember(connection, "profile", "x", "2000-01-01", now)
                page = profile_page(connection)
            return pages.edit_page(connection, page.id, now, "person", text=text)

        return await memory.async_write(profile)
    return await memory.async_write(
        lambda connection, now: pages.create_page(
            connection,
            name,
            kind,
            text=text,
            aliases=aliases or [],
            now=now,
            author="person",
        )
    )


async def nightly_runs(hass: HomeAssistant, limit: int = 50) -> list[dict[str, Any]]:
    """The nightly pass's runs, newest first, as the Nightly page lists them."""
    return await hass.data[DATA_NIGHTLY_JOB].async_runs(limit)
