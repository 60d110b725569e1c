"""Chat's table in assistant.db (migration 7): who owns which thread.

The record keeps a thread's turns (its conversation has the thread's id);
this table only says whose thread it is, which agent it talks to and what
it is called. A released migration is never edited.
"""

from typing import Final

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

SCHEMA: Final = (Migration(7, "chat threads", CHAT_THREADS_V7),)
