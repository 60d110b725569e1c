"""A household's record, written before Home Assistant starts, through the record's own code."""

import contextlib
from pathlib import Path
import sqlite3
import time

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.const import CONFIG_FOLDER
from custom_components.desktop_assistant.memory import pages
from custom_components.desktop_assistant.record import database
from custom_components.desktop_assistant.record.models import (
    ConversationStart,
    Entry,
    TurnWrite,
)
from custom_components.desktop_assistant.store import DB_FILE, in_order
from custom_components.desktop_assistant.store.store import connect, transaction

AGENT = "conversation.household_model"
# Older small talk, so that the list has more than one page.
FILLER = 26


def _turn(
    conversation_id: str,
    at: float,
    entries: list[Entry],
    channel: str = "text",
    device: tuple[str, str] | None = None,
) -> TurnWrite:
    device_id, device_name = device or (None, None)
    return TurnWrite(
        ConversationStart(
            conversation_id, AGENT, None, channel, device_id, device_name, "en"
        ),
        at,
        entries,
    )


def seed_record(config_dir: Path) -> dict[str, str]:
    """Write the household's conversations; return the notable ones' ids by role."""
    path = config_dir / CONFIG_FOLDER / DB_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    turns = [
        _turn(
            f"filler-{number:02d}",
            now - 86400 * 3 - number * 600,
            [
                Entry(
                    "user",
                    now - 86400 * 3 - number * 600,
                    f"Small talk number {number}",
                    source="text",
                ),
                Entry("assistant", now - 86400 * 3 - number * 600 + 1, "Nice to chat."),
            ],
        )
        for number in range(FILLER)
    ]
    kitchen_at = now - 7200
    turns.append(
        _turn(
            "kitchen-weather",
            kitchen_at,
            [
                Entry(
                    "user",
                    kitchen_at,
                    "What's the weather tomorrow in Utrecht?",
                    source="speech",
                ),
                Entry(
                    "tool_call",
                    kitchen_at + 1,
                    tool_name="desktop_assistant__weather",
                    tool_arguments={"place": "Utrecht", "when": "tomorrow"},
                    tool_result="Utrecht tomorrow: drizzle, 12 °C",
                    tool_error=False,
                ),
                Entry(
                    "assistant",
                    kitchen_at + 2,
                    "Tomorrow Utrecht gets light rain and 12 degrees.",
                ),
            ],
            channel="voice",
            device=("satellite-kitchen", "Kitchen satellite"),
        )
    )
    film_at = now - 3600
    turns.append(
        _turn(
            "film-night",
            film_at,
            [
                Entry(
                    "user",
                    film_at,
                    "Which film did we say we'd watch, Perfect Days?",
                    source="text",
                ),
                Entry(
                    "assistant",
                    film_at + 1,
                    "It was Perfect Days, by Wim",
                    interrupted=True,
                ),
                Entry(
                    "fault",
                    film_at + 2,
                    "Sorry, my connection to the language model was cut off.",
                    fault="stream_cut",
                ),
            ],
        )
    )
    with contextlib.closing(connect(path, in_order(SCHEMAS))) as connection:
        # In the order they happened, as the record writes them.
        database.append_turns(connection, sorted(turns, key=lambda turn: turn.at))
        seed_memory(connection, now - 86400)
    return {"voice": "kitchen-weather", "interrupted": "film-night"}


ANOUK = """Anouk is [[Sara]]'s sister. She lives in [[Utrecht]].

## Notes
- 2026-11-02: Birthday is 3 November
- 2026-11-10: Likes **strong** coffee
"""
GARDEN = """The garden is behind the house.

## Notes
- 2026-11-05: Tomatoes planted in May
- 2026-11-06: The hose leaks
"""
# What a page holds when someone pasted markup into it: shown, never run.
HOSTILE = """Pasted from a web page:

<img src=x onerror="window.hostileRan = true">
<script>window.hostileRan = true</script>
"""


def seed_memory(connection: sqlite3.Connection, now: float) -> None:
    """The household's pages: linked people, a dangling link, pasted markup."""
    with transaction(connection):
        pages.remember(
            connection,
            "profile",
            "The household speaks Dutch and English",
            "2026-11-01",
            now,
        )
        for name, kind, text, aliases in (
            ("Anouk", "person", ANOUK, ["Nouk"]),
            ("Sara", "person", "Sara lives with [[Anouk|her sister]]'s cat.\n", []),
            ("Hostile paste", "thing", HOSTILE, []),
            ("Old bike", "thing", "A red bike in the shed.\n", []),
            ("Garden", "place", GARDEN, []),
        ):
            pages.create_page(
                connection,
                name,
                kind,
                text=text,
                aliases=aliases,
                now=now,
                author="person",
            )
