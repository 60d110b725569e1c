"""What the nightly pass reads: the queue of quiet conversations and read marks.

Conversations reach the queue when the record says they went quiet; their
entries are read through the record's own functions. A mark says how far
extraction read a conversation, and which one: a deleted id used again is
a new conversation (`started_at`) and is read from its start. Functions of
a connection, run on the store's thread; no Home Assistant import.
"""

from dataclasses import dataclass, field
from datetime import datetime
import json
import sqlite3
from typing import Any, Final

from ...text import fold_name
from ..page_reads import Page, page_named
from ..pages import remember

# A conversation whose new user text is shorter than this is skipped.
TRIVIAL_USER_CHARS: Final = 20
# A conversation that failed this many times is given up (marked read).
MAX_FAILURES: Final = 3


@dataclass(slots=True)
class Transcript:
    """The part of a conversation extraction has not read yet."""

    conversation_id: str
    device_name: str | None
    language: str | None
    last_activity_at: datetime
    started_at: str
    last_entry: int
    failures: int = 0
    lines: list[str] = field(default_factory=list)
    user_chars: int = 0
    # Whose the conversation is: a member's user id; None for the household's.
    user_id: str | None = None

    @property
    def trivial(self) -> bool:
        """Whether the person said almost nothing new."""
        return self.user_chars < TRIVIAL_USER_CHARS


def enqueue(connection: sqlite3.Connection, conversation_id: str, now: float) -> None:
    """Queue a conversation that went quiet (once, however often it goes quiet)."""
    connection.execute(
        "INSERT OR IGNORE INTO extraction_queue (conversation_id, queued_at) "
        "VALUES (?, ?)",
        (conversation_id, now),
    )


def enqueue_unread(
    connection: sqlite3.Connection,
    conversations: list[tuple[str, datetime]],
    now: float,
) -> None:
    """Queue the quiet conversations active since extraction last read them."""
    for conversation_id, last_activity in conversations:
        row = connection.execute(
            "SELECT at FROM extracted_conversations WHERE conversation_id = ?",
            (conversation_id,),
        ).fetchone()
        if row is None or row[0] < last_activity.timestamp():
            enqueue(connection, conversation_id, now)


def queued(connection: sqlite3.Connection, limit: int) -> list[tuple[str, int]]:
    """Queued conversations and their failures: fewest failures, then oldest, first."""
    return connection.execute(
        "SELECT conversation_id, failures FROM extraction_queue "
        "ORDER BY failures, queued_at, rowid LIMIT ?",
        (limit,),
    ).fetchall()


def dequeue(connection: sqlite3.Connection, conversation_id: str) -> None:
    """Take a conversation off the queue (read, or gone from the record)."""
    connection.execute(
        "DELETE FROM extraction_queue WHERE conversation_id = ?", (conversation_id,)
    )


def read_mark(connection: sqlite3.Connection, conversation: dict[str, Any]) -> int:
    """The last entry extraction read of this conversation; 0 when none."""
    row = connection.execute(
        "SELECT last_entry, started_at FROM extracted_conversations "
        "WHERE conversation_id = ?",
        (conversation["conversation_id"],),
    ).fetchone()
    # A mark written before started_at was kept is trusted.
    if row is None or row[1] not in (None, conversation["started_at"]):
        return 0
    return int(row[0])


def transcript_of(
    conversation: dict[str, Any], read_up_to: int, failures: int = 0
) -> Transcript:
    """The entries after `read_up_to`, as the model reads them.

    The person's words, the assistant's answers, and each tool call's name
    and arguments; never a tool's result.
    """
    transcript = Transcript(
        conversation["conversation_id"],
        conversation["device_name"],
        conversation["language"],
        datetime.fromisoformat(conversation["last_activity_at"]),
        conversation["started_at"],
        read_up_to,
        failures,
        user_id=conversation["user_id"],
    )
    for entry in conversation["entries"]:
        if entry["entry_id"] <= read_up_to:
            continue
        transcript.last_entry = entry["entry_id"]
        text = (entry.get("text") or "").strip()
        if entry["kind"] == "user" and text:
            transcript.user_chars += len(text)
            transcript.lines.append(f"Person: {text}")
        elif entry["kind"] == "assistant" and text:
            transcript.lines.append(f"Assistant: {text}")
        elif entry["kind"] == "tool_call" and entry.get("tool_name"):
            arguments = json.dumps(entry.get("arguments"), ensure_ascii=False)
            transcript.lines.append(
                f"(The assistant called the tool {entry['tool_name']} with {arguments})"
            )
    return transcript


def transcript_parts(lines: list[str], chars: int, most: int) -> list[list[str]]:
    """The lines in parts of at most `chars` characters; the newest `most` parts.

    A line longer than a part is cut, so no request outgrows the context.
    """
    parts: list[list[str]] = []
    size = chars
    for whole in lines:
        line = whole if len(whole) <= chars else whole[: chars - 1] + "…"
        if size + len(line) + 1 > chars:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line) + 1
    return parts[-most:]


def mark_extracted(
    connection: sqlite3.Connection, transcript: Transcript, now: float
) -> None:
    """Remember how far extraction read a conversation; take it off the queue."""
    connection.execute(
        "INSERT INTO extracted_conversations (conversation_id, last_entry, at, "
        "started_at) VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE "
        "SET last_entry = excluded.last_entry, at = excluded.at, "
        "started_at = excluded.started_at",
        (transcript.conversation_id, transcript.last_entry, now, transcript.started_at),
    )
    dequeue(connection, transcript.conversation_id)


def count_failure(connection: sqlite3.Connection, conversation_id: str) -> None:
    """Count a failed extraction: the conversation goes behind the others."""
    connection.execute(
        "UPDATE extraction_queue SET failures = failures + 1 WHERE conversation_id = ?",
        (conversation_id,),
    )


def is_device_name(page: str, device_name: str | None) -> bool:
    """Whether a note's page is the device the person spoke to."""
    if not device_name:
        return False
    return fold_name(page) in {
        fold_name(device_name),
        fold_name(device_name.split()[0]),
    }


def note_on_owners_page(
    connection: sqlite3.Connection,
    note: dict[str, str],
    day: str,
    now: float,
    transcript: Transcript,
) -> tuple[Page, bool, str | None]:
    """Write an extracted note where the conversation's owner keeps it.

    A member's typed conversation notes on that member's pages only; the
    household's (a satellite's, an automation's) on the household's only
    (`reader.py`). Returns the page, whether the note was added, and the
    page's text before.
    """
    before = page_named(connection, note["page"], transcript.user_id)
    page, added = remember(
        connection,
        note["page"],
        note["fact"],
        day,
        now,
        author="extraction",
        kind=note["type"],
        source=transcript.conversation_id,
        user_id=transcript.user_id,
    )
    return page, added, before.text if before else None
