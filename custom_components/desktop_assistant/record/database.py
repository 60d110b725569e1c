"""The record's statements; each function runs on the store's thread."""

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
import json
import sqlite3
from typing import Any, Final

from ..reader import Reader
from ..store import transaction
from ..text import valid_unicode
from .models import Entry, TurnWrite
from .search import argument_values

# How many characters of the first thing said a conversation list shows.
FIRST_WORDS: Final = 120
# The owner filter's value for the household's conversations (no user id is
# empty).
HOUSEHOLD_OWNER: Final = ""

CONVERSATION_COLUMNS: Final = f"""
    c.id, c.conversation_id, c.agent_id, c.channel, c.device_id, c.device_name,
    c.language, c.started_at, c.last_activity_at, c.status,
    (SELECT substr(text, 1, {FIRST_WORDS}) FROM entries
     WHERE conversation = c.id AND kind = 'user' ORDER BY id LIMIT 1),
    c.activity, c.user_id
"""


def storable(text: str | None) -> str | None:
    """Text as SQLite can hold it (see `valid_unicode`)."""
    return None if text is None else valid_unicode(text)


def iso(timestamp: float | None) -> str | None:
    """A stored time as ISO 8601 in UTC."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def conversation_summary(row: Sequence[Any]) -> dict[str, Any]:
    """A conversation as the websocket API and the recall tool describe it."""
    return {
        "conversation_id": row[1],
        "agent_id": row[2],
        "channel": row[3],
        "device_id": row[4],
        "device_name": row[5],
        "language": row[6],
        "started_at": iso(row[7]),
        "last_activity_at": iso(row[8]),
        "status": row[9],
        "first_words": row[10],
        "user_id": row[12],
    }


def append_turns(connection: sqlite3.Connection, writes: list[TurnWrite]) -> None:
    """Add turns' entries in one transaction; see `append`."""
    with transaction(connection):
        for write in writes:
            append(connection, write)


def append(connection: sqlite3.Connection, write: TurnWrite) -> None:
    """Add the turn's entries, creating the conversation on its first turn.

    The conversation's row in the search index is written again with all
    its words, so it stays in step with its entries. The caller holds the
    transaction.
    """
    (activity,) = connection.execute(
        "SELECT coalesce(max(activity), 0) + 1 FROM conversations"
    ).fetchone()
    row = connection.execute(
        "SELECT id, activity FROM conversations WHERE conversation_id = ?",
        (storable(write.start.conversation_id),),
    ).fetchone()
    if row is None:
        conversation = _insert_conversation(connection, write, activity)
    else:
        conversation, previous = row
        _touch_conversation(connection, write, conversation, previous, activity)
    connection.executemany(
        "INSERT INTO entries (conversation, at, kind, text, source, interrupted,"
        " tool_name, tool_arguments, tool_result, tool_error, fault, server, model)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(conversation, *entry_row(entry)) for entry in write.entries],
    )
    index_words(connection, conversation, activity)


def _insert_conversation(
    connection: sqlite3.Connection, write: TurnWrite, activity: int
) -> int:
    """The row of a conversation's first turn; its id."""
    start = write.start
    (conversation,) = connection.execute(
        "INSERT INTO conversations (conversation_id, agent_id,"
        " config_entry_id, channel, device_id, device_name, language,"
        " started_at, last_activity_at, activity, user_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            storable(start.conversation_id),
            storable(start.agent_id),
            start.config_entry_id,
            start.channel,
            start.device_id,
            storable(start.device_name),
            storable(start.language),
            min((entry.at for entry in write.entries), default=write.at),
            write.at,
            activity,
            start.user_id,
        ),
    ).fetchone()
    return int(conversation)


def _touch_conversation(
    connection: sqlite3.Connection,
    write: TurnWrite,
    conversation: int,
    previous: int,
    activity: int,
) -> None:
    """A conversation's later turn: active again, its search row to rewrite."""
    connection.execute("DELETE FROM conversation_search WHERE rowid = ?", (previous,))
    connection.execute(
        "UPDATE conversations SET last_activity_at = max(last_activity_at, ?),"
        " activity = ?, status = 'active', quiet_at = NULL,"
        " device_id = coalesce(device_id, ?),"
        " device_name = coalesce(device_name, ?) WHERE id = ?",
        (
            write.at,
            activity,
            write.start.device_id,
            storable(write.start.device_name),
            conversation,
        ),
    )


def entry_row(entry: Entry) -> tuple[Any, ...]:
    """An entry's columns after `conversation`, every text storable."""
    return (
        entry.at,
        entry.kind,
        storable(entry.text),
        entry.source,
        int(entry.interrupted),
        storable(entry.tool_name),
        None
        if entry.tool_arguments is None
        else storable(json.dumps(entry.tool_arguments, ensure_ascii=False)),
        storable(entry.tool_result),
        None if entry.tool_error is None else int(entry.tool_error),
        entry.fault,
        entry.server,
        entry.model,
    )


def said_entries(
    connection: sqlite3.Connection, conversation: int
) -> Iterator[tuple[str, str | None, str | None, list[str]]]:
    """What was said in a conversation, in order; never tool results.

    Each entry is a question, an answer or a tool call: its kind, its text,
    and a tool call's name and argument values.
    """
    for kind, text, tool_name, tool_arguments in connection.execute(
        "SELECT kind, text, tool_name, tool_arguments FROM entries"
        " WHERE conversation = ? AND kind IN ('user', 'assistant', 'tool_call')"
        " ORDER BY id",
        (conversation,),
    ):
        values = (
            argument_values(json.loads(tool_arguments or "{}"))
            if kind == "tool_call"
            else []
        )
        yield kind, text, tool_name, values


def index_words(
    connection: sqlite3.Connection, conversation: int, activity: int
) -> None:
    """Write the conversation's searchable words as row `activity` of the index.

    They are what the person and the assistant said, and each tool call's
    name and argument values; never tool results.
    """
    pieces: list[str] = []
    for kind, text, tool_name, values in said_entries(connection, conversation):
        if kind == "tool_call":
            pieces.append(tool_name or "")
            pieces.extend(values)
        elif text:
            pieces.append(text)
    connection.execute(
        "INSERT INTO conversation_search (rowid, words) VALUES (?, ?)",
        (activity, "\n".join(pieces)),
    )


def matching(match: str | None) -> tuple[str, str, list[Any]]:
    """The FROM clause, the column that orders by activity, and their params.

    With words, the index is read first, newest activity first, and each of
    its rows joined to its conversation: a page of a frequent word's matches
    is read without sorting them all.
    """
    if match is None:
        return "conversations c", "c.activity", []
    return (
        "conversation_search s CROSS JOIN conversations c ON c.activity = s.rowid",
        "s.rowid",
        [match],
    )


def select_conversations(
    connection: sqlite3.Connection,
    match: str | None,
    filters: Iterable[tuple[str, Any]],
    *,
    reader: Reader,
    limit: int,
    before: int | None = None,
) -> list[tuple[Any, ...]]:
    """Rows of CONVERSATION_COLUMNS matching `match` that `reader` may read.

    Newest activity first. Each filter is a condition with one `?` and its
    value; one whose value is None is left out. `before` is an activity:
    only older ones are read.
    """
    source, order, params = matching(match)
    readable, params_of_reader = reader.condition("c.user_id")
    where = ["conversation_search MATCH ?"] if match is not None else []
    where.append(readable)
    params += params_of_reader
    if before is not None:
        where.append(f"{order} < ?")
        params.append(before)
    for condition, value in filters:
        if value is not None:
            where.append(condition)
            params.append(value)
    return connection.execute(
        f"SELECT {CONVERSATION_COLUMNS} FROM {source} WHERE {' AND '.join(where)}"
        f" ORDER BY {order} DESC LIMIT ?",
        (*params, limit),
    ).fetchall()


def list_conversations(
    connection: sqlite3.Connection,
    *,
    reader: Reader,
    limit: int,
    before: int | None = None,
    channel: str | None = None,
    device_id: str | None = None,
    owner: str | None = None,
    match: str | None = None,
) -> tuple[list[dict[str, Any]], int | None]:
    """A page of conversations, newest activity first, and where the next starts.

    `before` is the activity of the last conversation of the previous page;
    the filters hold across pages because they are applied in the same query
    as the cursor. `owner` is a user id, or HOUSEHOLD_OWNER for the
    household's conversations.
    """
    # One more than a page: whether it is there says if another page follows.
    rows = select_conversations(
        connection,
        match,
        (
            ("c.channel = ?", channel),
            ("c.device_id = ?", device_id),
            ("coalesce(c.user_id, '') = ?", owner),
        ),
        reader=reader,
        limit=limit + 1,
        before=before,
    )
    following = None
    if len(rows) > limit:
        rows = rows[:limit]
        following = rows[-1][11]
    return [conversation_summary(row) for row in rows], following


def list_devices(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    """The devices conversations came from, each with its latest name."""
    # With MAX(), SQLite takes device_name from the row holding the maximum.
    return [
        {"device_id": row[0], "device_name": row[1]}
        for row in connection.execute(
            "SELECT device_id, device_name, MAX(last_activity_at) FROM conversations"
            " WHERE device_id IS NOT NULL GROUP BY device_id"
            " ORDER BY device_name COLLATE NOCASE"
        )
    ]


def get_conversation(
    connection: sqlite3.Connection, conversation_id: str
) -> dict[str, Any] | None:
    """A conversation with all its entries in order, or None."""
    row = connection.execute(
        f"SELECT {CONVERSATION_COLUMNS} FROM conversations c"
        " WHERE c.conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    if row is None:
        return None
    entries = [
        entry_dict(entry)
        for entry in connection.execute(
            "SELECT id, at, kind, text, source, interrupted, tool_name,"
            " tool_arguments, tool_result, tool_error, fault, server, model"
            " FROM entries"
            " WHERE conversation = ? ORDER BY id",
            (row[0],),
        )
    ]
    return conversation_summary(row) | {"entries": entries}


def conversations_matching(
    connection: sqlite3.Connection, match: str, conversation_ids: Sequence[str]
) -> set[str]:
    """Which of the conversations have every word of `match` (an index expression)."""
    found: set[str] = set()
    # In batches: SQLite bounds the number of parameters of a statement.
    for start in range(0, len(conversation_ids), 500):
        batch = conversation_ids[start : start + 500]
        found.update(
            row[0]
            for row in connection.execute(
                "SELECT c.conversation_id FROM conversation_search s"
                " CROSS JOIN conversations c ON c.activity = s.rowid"
                " WHERE conversation_search MATCH ?"
                f" AND c.conversation_id IN ({','.join('?' * len(batch))})",
                (match, *batch),
            )
        )
    return found


def entry_dict(row: Sequence[Any]) -> dict[str, Any]:
    """An entry as the websocket API gives it; absent fields are left out."""
    entry: dict[str, Any] = {"entry_id": row[0], "at": iso(row[1]), "kind": row[2]}
    if row[2] in ("user", "assistant", "fault") and row[3] is not None:
        entry["text"] = row[3]
    if row[2] == "user":
        entry["source"] = row[4]
    elif row[2] == "assistant":
        entry["interrupted"] = bool(row[5])
        if row[11] is not None:
            entry["server"] = row[11]
            entry["model"] = row[12]
    elif row[2] == "tool_call":
        entry["tool_name"] = row[6]
        entry["arguments"] = json.loads(row[7] or "{}")
        entry["result"] = row[8]
        entry["error"] = None if row[9] is None else bool(row[9])
    else:
        entry["fault"] = row[10]
    return entry


def active_conversations(
    connection: sqlite3.Connection,
) -> list[tuple[str, str | None, float]]:
    """(conversation id, config entry, last activity) of active conversations."""
    return connection.execute(
        "SELECT conversation_id, config_entry_id, last_activity_at"
        " FROM conversations WHERE status = 'active'"
    ).fetchall()


def mark_quiet(
    connection: sqlite3.Connection, due: Sequence[tuple[str, float]], at: float
) -> list[str]:
    """Mark conversations quiet unless active again since; return those marked.

    `due` pairs each conversation with the last activity it was judged on.
    """
    marked: list[str] = []
    with transaction(connection):
        for conversation_id, last_activity_at in due:
            if connection.execute(
                "UPDATE conversations SET status = 'quiet', quiet_at = ?"
                " WHERE conversation_id = ? AND status = 'active'"
                " AND last_activity_at = ?",
                (at, conversation_id, last_activity_at),
            ).rowcount:
                marked.append(conversation_id)
    return marked


def find_conversations(
    connection: sqlite3.Connection,
    match: str,
    *,
    reader: Reader,
    start: float | None,
    end: float | None,
    exclude: str | None,
    limit: int,
) -> list[tuple[dict[str, Any], list[str]]]:
    """Conversations `reader` may read matching `match`, active within [start, end).

    Newest first, each with the texts snippets may come from (never tool
    results).
    """
    rows = select_conversations(
        connection,
        match,
        (
            ("c.last_activity_at >= ?", start),
            ("c.started_at < ?", end),
            ("c.conversation_id != ?", exclude),
        ),
        reader=reader,
        limit=limit,
    )
    found = []
    for row in rows:
        texts = []
        for kind, text, tool_name, values in said_entries(connection, row[0]):
            if kind == "tool_call":
                texts.append(f"{tool_name}({' '.join(values)})")
            elif text:
                texts.append(text)
        found.append((conversation_summary(row), texts))
    return found


def counts(connection: sqlite3.Connection) -> dict[str, Any]:
    """The record's size and schema version, for diagnostics."""
    conversations, entries = connection.execute(
        "SELECT (SELECT count(*) FROM conversations), (SELECT count(*) FROM entries)"
    ).fetchone()
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    return {
        "conversations": conversations,
        "entries": entries,
        "schema_version": version,
    }
