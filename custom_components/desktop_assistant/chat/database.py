"""Chat's statements; each function runs on the store's thread."""

from collections.abc import Sequence
import sqlite3
from typing import Any, Final

from ..record import database as record_database
from ..store import transaction

# A thread's fields, as its columns and as the websocket API names them.
THREAD_FIELDS: Final = (
    "thread_id",
    "user_id",
    "agent_id",
    "title",
    "created_at",
    "updated_at",
)
THREAD_COLUMNS: Final = ", ".join(THREAD_FIELDS)


def thread_dict(row: Sequence[Any]) -> dict[str, Any]:
    """A thread as the websocket API gives it: its times in ISO 8601."""
    thread = dict(zip(THREAD_FIELDS, row, strict=True))
    for time_field in ("created_at", "updated_at"):
        thread[time_field] = record_database.iso(thread[time_field])
    return thread


def create_thread(
    connection: sqlite3.Connection,
    thread_id: str,
    *,
    user_id: str,
    agent_id: str,
    title: str,
    at: float,
) -> None:
    """Add a thread of `user_id`."""
    with transaction(connection):
        connection.execute(
            f"INSERT INTO chat_threads ({THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (
                thread_id,
                user_id,
                agent_id,
                record_database.storable(title),
                at,
                at,
            ),
        )


def get_thread(connection: sqlite3.Connection, thread_id: str) -> dict[str, Any] | None:
    """A thread, or None."""
    row = connection.execute(
        f"SELECT {THREAD_COLUMNS} FROM chat_threads WHERE thread_id = ?", (thread_id,)
    ).fetchone()
    return None if row is None else thread_dict(row)


def touch_thread(connection: sqlite3.Connection, thread_id: str, at: float) -> None:
    """Note the thread's latest turn: it moves to the top of its owner's list."""
    with transaction(connection):
        connection.execute(
            "UPDATE chat_threads SET updated_at = max(updated_at, ?)"
            " WHERE thread_id = ?",
            (at, thread_id),
        )


def list_threads(
    connection: sqlite3.Connection, user_id: str, match: str | None, limit: int
) -> list[dict[str, Any]]:
    """The user's threads, newest first; with `match`, those whose turns match it.

    `match` is an expression of the record's search index, which holds every
    word said in a conversation.
    """
    rows = connection.execute(
        f"SELECT {THREAD_COLUMNS} FROM chat_threads WHERE user_id = ?"
        " ORDER BY updated_at DESC, rowid DESC",
        (user_id,),
    ).fetchall()
    if match is not None:
        found = record_database.conversations_matching(
            connection, match, [row[0] for row in rows]
        )
        rows = [row for row in rows if row[0] in found]
    return [thread_dict(row) for row in rows[:limit]]
