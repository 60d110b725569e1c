"""The conversation record's tables in assistant.db (migration 1).

Handed to the store at setup (`record.SCHEMA`); a released migration is never
edited, a change is a new migration with the next free number.
"""

from typing import Final

from ..store import Migration

# The conversation record. A conversation is HA's conversation id; its
# entries are in `id` order. `activity` is a sequence number renewed by every
# write to a conversation: newest activity first is `activity` descending.
# The search index has one row per conversation, holding every searchable
# word of it, with `activity` as its rowid: a query finds conversations (not
# scattered entries), and FTS5 hands them over newest first, so a page of a
# frequent word's matches is read without sorting them all. It stores no
# text (contentless), only what it needs to match and to delete.
RECORD_V1: Final = """
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    config_entry_id TEXT,
    channel TEXT NOT NULL CHECK (channel IN ('voice', 'text')),
    device_id TEXT,
    device_name TEXT,
    language TEXT,
    started_at REAL NOT NULL,
    last_activity_at REAL NOT NULL,
    activity INTEGER NOT NULL UNIQUE,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'quiet')),
    quiet_at REAL
);
CREATE INDEX conversations_by_last_activity ON conversations (last_activity_at);
CREATE INDEX conversations_by_channel ON conversations (channel, activity);
CREATE INDEX conversations_by_device ON conversations (device_id, activity);
CREATE INDEX conversations_active
    ON conversations (last_activity_at) WHERE status = 'active';
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    conversation INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    at REAL NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('user', 'assistant', 'tool_call', 'fault')),
    text TEXT,
    source TEXT CHECK (source IN ('speech', 'text')),
    interrupted INTEGER NOT NULL DEFAULT 0,
    tool_name TEXT,
    tool_arguments TEXT,
    tool_result TEXT,
    tool_error INTEGER,
    fault TEXT
);
CREATE INDEX entries_by_conversation ON entries (conversation, id);
CREATE VIRTUAL TABLE conversation_search USING fts5 (
    words,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER conversations_unsearch AFTER DELETE ON conversations BEGIN
    DELETE FROM conversation_search WHERE rowid = old.activity;
END;
"""

# Which server and model answered each reply (issue 20: fallback servers).
ANSWERED_BY_V4: Final = """
ALTER TABLE entries ADD COLUMN server TEXT;
ALTER TABLE entries ADD COLUMN model TEXT;
"""

# Whose each conversation is (issue 38): the user who typed it, NULL for
# the household's. Conversations recorded before are the household's.
OWNER_V11: Final = """
ALTER TABLE conversations ADD COLUMN user_id TEXT;
CREATE INDEX conversations_by_user ON conversations (user_id, activity);
"""

SCHEMA: Final = (
    Migration(1, "conversation record", RECORD_V1),
    Migration(4, "the server and model of each reply", ANSWERED_BY_V4),
    Migration(11, "whose each conversation is", OWNER_V11),
)
