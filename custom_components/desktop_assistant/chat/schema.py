"""Chat's table in assistant.db (migration 7): who owns which thread.

The record keeps a thread's turns (its conversation has the thread's id);
this table only says whose thread it is, which agent it talks to and what
it is called. A released migration is never edited.
"""

import sqlite3
from typing import Final

from ..record import owners as record_owners
from ..store import Migration

# `thread_id` is the Home Assistant conversation id of the thread.
CHAT_THREADS_V7: Final = """
CREATE TABLE chat_threads (
    thread_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX chat_threads_by_user ON chat_threads (user_id, updated_at);
"""


def owned_threads_v12(connection: sqlite3.Connection) -> None:
    """Make each thread's recorded conversation its owner's (issue 38).

    The record learnt whose a conversation is in migration 11; a thread
    typed before then says it here.
    """
    record_owners.set_owners(
        connection,
        connection.execute("SELECT thread_id, user_id FROM chat_threads").fetchall(),
    )


SCHEMA: Final = (
    Migration(7, "chat threads", CHAT_THREADS_V7),
    Migration(12, "chat threads' conversations are their owners'", owned_threads_v12),
)
