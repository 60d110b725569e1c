"""Nightly runs in the database: extraction input, applying a plan, runs, revert.

Functions of a connection, run on the store's thread; no Home Assistant import.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
import json
import sqlite3
from typing import Any, Final

from ..text import fold_name
from .pages import (
    MemoryError,
    Page,
    create_page,
    edit_page,
    get_page,
    index_page,
    list_pages,
    profile_page,
    revise,
    set_names,
)
from .plan import MemoryState, PageState, Plan

KEEP_RUNS: Final = 50
# A conversation whose new user text is shorter than this is skipped.
TRIVIAL_USER_CHARS: Final = 20


@dataclass(slots=True)
class Transcript:
    """The part of a conversation extraction has not read yet."""

    conversation_id: str
    device_name: str | None
    language: str | None
    last_activity_at: float
    last_entry: int
    lines: list[str] = field(default_factory=list)
    user_chars: int = 0

    @property
    def trivial(self) -> bool:
        """Whether the person said almost nothing new."""
        return self.user_chars < TRIVIAL_USER_CHARS


def pending_transcripts(connection: sqlite3.Connection, limit: int) -> list[Transcript]:
    """Quiet conversations with entries extraction has not read, oldest first.

    What the model reads: the person's words, the assistant's answers, and
    each tool call's name and arguments; never a tool's result.
    """
    rows = connection.execute(
        "SELECT c.id, c.conversation_id, c.device_name, c.language, "
        "c.last_activity_at, coalesce(x.last_entry, 0) FROM conversations c "
        "LEFT JOIN extracted_conversations x ON x.conversation_id = c.conversation_id "
        "WHERE c.status = 'quiet' AND EXISTS (SELECT 1 FROM entries e "
        "WHERE e.conversation = c.id AND e.id > coalesce(x.last_entry, 0)) "
        "ORDER BY c.last_activity_at, c.id LIMIT ?",
        (limit,),
    ).fetchall()
    transcripts = []
    for row_id, conversation_id, device, language, last_activity, seen in rows:
        transcript = Transcript(conversation_id, device, language, last_activity, seen)
        for entry_id, kind, text, tool_name, arguments in connection.execute(
            "SELECT id, kind, text, tool_name, tool_arguments FROM entries "
            "WHERE conversation = ? AND id > ? ORDER BY id",
            (row_id, seen),
        ):
            transcript.last_entry = entry_id
            if kind == "user" and text:
                transcript.user_chars += len(text.strip())
                transcript.lines.append(f"Person: {text.strip()}")
            elif kind == "assistant" and text:
                transcript.lines.append(f"Assistant: {text.strip()}")
            elif kind == "tool_call" and tool_name:
                transcript.lines.append(
                    f"(The assistant called the tool {tool_name} with {arguments})"
                )
        transcripts.append(transcript)
    return transcripts


def mark_extracted(
    connection: sqlite3.Connection, transcript: Transcript, now: float
) -> None:
    """Remember how far extraction read a conversation."""
    connection.execute(
        "INSERT INTO extracted_conversations (conversation_id, last_entry, at) "
        "VALUES (?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET "
        "last_entry = excluded.last_entry, at = excluded.at",
        (transcript.conversation_id, transcript.last_entry, now),
    )


def get_state(connection: sqlite3.Connection, key: str) -> str | None:
    """A value of the pass's bookkeeping."""
    row = connection.execute(
        "SELECT value FROM memory_state WHERE key = ?", (key,)
    ).fetchone()
    return None if row is None else str(row[0])


def set_state(connection: sqlite3.Connection, key: str, value: str) -> None:
    """Set a value of the pass's bookkeeping."""
    connection.execute(
        "INSERT OR REPLACE INTO memory_state (key, value) VALUES (?, ?)", (key, value)
    )


def latest_revision(connection: sqlite3.Connection) -> int:
    """The newest revision id of any page."""
    return int(
        connection.execute("SELECT max(id) FROM page_revisions").fetchone()[0] or 0
    )


def memory_state(connection: sqlite3.Connection, budget: int) -> MemoryState:
    """Memory as the plan checks see it (live pages only)."""
    live, deleted = list_pages(connection)
    tombstoned = frozenset(
        row[0] for row in connection.execute("SELECT folded FROM tombstones")
    )
    # A recently deleted page still holds its names.
    held = tuple(
        PageState(page.name, "", page.revision, page.aliases) for page in deleted
    )
    return MemoryState(
        tuple(
            PageState(
                page.name, page.text, page.revision, page.aliases, page.is_profile
            )
            for page in live
        )
        + held,
        tombstoned,
        budget,
    )


def pages_to_consolidate(
    connection: sqlite3.Connection, since_revision: int, limit: int
) -> list[Page]:
    """The profile and the pages changed since the last tidy-up, newest first."""
    profile = profile_page(connection)
    rows = connection.execute(
        "SELECT DISTINCT page FROM page_revisions WHERE id > ? ORDER BY id DESC",
        (since_revision,),
    ).fetchall()
    pages: list[Page] = [profile] if profile is not None else []
    for (page_id,) in rows:
        page = get_page(connection, page_id)
        if page.deleted_at is None and not page.is_profile and len(pages) < limit:
            pages.append(page)
    return pages


@dataclass(slots=True)
class PageChange:
    """What a run did to one page."""

    page: int | None
    page_name: str
    action: str
    before_text: str | None
    after_text: str | None
    before_revision: int | None
    after_revision: int | None
    dropped: list[dict[str, str]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    absorbed: dict[str, Any] | None = None


def apply_plan(
    connection: sqlite3.Connection, plan: Plan, now: float, run: int
) -> list[PageChange]:
    """Apply a checked plan (the caller holds one transaction); return the changes."""
    changes: list[PageChange] = []

    def find(name: str) -> Page:
        row = connection.execute(
            "SELECT page FROM page_names WHERE folded = ?", (fold_name(name),)
        ).fetchone()
        if row is None:
            profile = profile_page(connection)
            if profile is not None and fold_name(name) == fold_name(profile.name):
                return profile
            raise MemoryError("not_found", f"there is no page {name!r}")
        return get_page(connection, row[0])

    for rewrite in plan.rewrites:
        page = find(rewrite.page)
        after = edit_page(
            connection, page.id, now, "nightly", text=rewrite.text, run=run
        )
        changes.append(
            PageChange(
                page.id,
                page.name,
                "rewrite",
                page.text,
                after.text,
                page.revision,
                after.revision,
                [{"line": d.line, "reason": d.reason} for d in rewrite.dropped],
            )
        )
    for create in plan.creates:
        page = create_page(
            connection,
            create.page,
            create.type,
            text=create.text,
            aliases=[],
            now=now,
            author="nightly",
            run=run,
        )
        changes.append(
            PageChange(
                page.id, page.name, "create", None, page.text, None, page.revision
            )
        )
    for merge in plan.merges:
        into, absorb = find(merge.into), find(merge.absorb)
        connection.execute("DELETE FROM page_names WHERE page = ?", (absorb.id,))
        connection.execute(
            "UPDATE pages SET deleted_at = ? WHERE id = ?", (now, absorb.id)
        )
        index_page(connection, get_page(connection, absorb.id))
        aliases = [*into.aliases, absorb.name, *absorb.aliases]
        connection.execute(
            "UPDATE pages SET text = ? WHERE id = ?", (merge.text, into.id)
        )
        set_names(connection, into.id, into.name, aliases)
        after = revise(connection, into.id, now, "nightly", run=run, note="merge")
        changes.append(
            PageChange(
                into.id,
                into.name,
                "merge",
                into.text,
                after.text,
                into.revision,
                after.revision,
                [{"line": d.line, "reason": d.reason} for d in merge.dropped],
                absorbed={
                    "page_id": absorb.id,
                    "name": absorb.name,
                    "aliases": list(absorb.aliases),
                    "text": absorb.text,
                    "before_aliases": list(into.aliases),
                },
            )
        )
    return changes


def insert_run(connection: sqlite3.Connection, trigger: str, now: float) -> int:
    """Start a run's row; return its id."""
    cursor = connection.execute(
        "INSERT INTO nightly_runs (trigger, started_at, outcome) VALUES (?, ?, ?)",
        (trigger, now, "running"),
    )
    return int(cursor.lastrowid or 0)


def finish_run(
    connection: sqlite3.Connection,
    run: int,
    *,
    duration: float,
    outcome: str,
    summary: dict[str, Any],
    detail: dict[str, Any],
    changes: list[PageChange],
) -> None:
    """Record how a run ended and what it changed; keep the last KEEP_RUNS runs."""
    connection.execute(
        "UPDATE nightly_runs SET duration = ?, outcome = ?, summary = ?, detail = ? "
        "WHERE id = ?",
        (duration, outcome, json.dumps(summary), json.dumps(detail), run),
    )
    connection.executemany(
        "INSERT INTO nightly_run_pages (run, page, page_name, action, before_text, "
        "after_text, before_revision, after_revision, dropped, sources, absorbed) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                run,
                change.page,
                change.page_name,
                change.action,
                change.before_text,
                change.after_text,
                change.before_revision,
                change.after_revision,
                json.dumps(change.dropped),
                json.dumps(change.sources),
                None if change.absorbed is None else json.dumps(change.absorbed),
            )
            for change in changes
        ],
    )
    connection.execute(
        "DELETE FROM nightly_runs WHERE id NOT IN "
        "(SELECT id FROM nightly_runs ORDER BY id DESC LIMIT ?)",
        (KEEP_RUNS,),
    )


def record_skipped(connection: sqlite3.Connection, trigger: str, now: float) -> int:
    """Record a run that did not start because another was running."""
    run = insert_run(connection, trigger, now)
    finish_run(
        connection,
        run,
        duration=0.0,
        outcome="skipped",
        summary={"reason": "another run was in progress"},
        detail={},
        changes=[],
    )
    return run


def _run_dict(row: tuple[Any, ...]) -> dict[str, Any]:
    return {
        "run_id": row[0],
        "trigger": row[1],
        "started_at": row[2],
        "duration": row[3],
        "outcome": row[4],
        "summary": json.loads(row[5]),
    }


_RUN_COLUMNS = "id, trigger, started_at, duration, outcome, summary, detail"


def list_runs(connection: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    """The most recent runs, newest first."""
    return [
        _run_dict(row)
        for row in connection.execute(
            f"SELECT {_RUN_COLUMNS} FROM nightly_runs ORDER BY id DESC LIMIT ?",
            (limit,),
        )
    ]


def get_run(
    connection: sqlite3.Connection, run: int, conversation_exists: Callable[[str], bool]
) -> dict[str, Any]:
    """A run with each page it changed, dropped lines and sources."""
    row = connection.execute(
        f"SELECT {_RUN_COLUMNS} FROM nightly_runs WHERE id = ?", (run,)
    ).fetchone()
    if row is None:
        raise MemoryError("not_found", f"there is no run {run}")
    result = _run_dict(row) | {"detail": json.loads(row[6])}
    result["pages"] = [
        {
            "page_id": page_row[0],
            "name": page_row[1],
            "action": page_row[2],
            "before": page_row[3],
            "after": page_row[4],
            "dropped": json.loads(page_row[5]),
            "sources": [
                {"conversation_id": source, "gone": not conversation_exists(source)}
                for source in json.loads(page_row[6])
            ],
            "absorbed": json.loads(page_row[7]) if page_row[7] else None,
        }
        for page_row in connection.execute(
            "SELECT page, page_name, action, before_text, after_text, dropped, "
            "sources, absorbed FROM nightly_run_pages WHERE run = ? ORDER BY id",
            (run,),
        )
    ]
    return result


def conversation_exists(connection: sqlite3.Connection, conversation_id: str) -> bool:
    """Whether the record still holds a conversation (retention removes them)."""
    return (
        connection.execute(
            "SELECT 1 FROM conversations WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()
        is not None
    )


def revert_page(
    connection: sqlite3.Connection, run: int, page_id: int, now: float
) -> dict[str, Any]:
    """Undo what a run did to a page, as a new revision.

    A page edited after the run is left alone and reported `edited_since`.
    Reverting a merge brings the absorbed page back with its names.
    """
    row = connection.execute(
        "SELECT action, before_text, after_revision, absorbed FROM nightly_run_pages "
        "WHERE run = ? AND page = ?",
        (run, page_id),
    ).fetchone()
    if row is None:
        raise MemoryError("not_found", f"run {run} did not change page {page_id}")
    action, before_text, after_revision, absorbed_json = row
    page = get_page(connection, page_id)
    if page.revision != after_revision or page.deleted_at is not None:
        raise MemoryError(
            "edited_since",
            f"the page {page.name!r} changed after the run; restore it from its "
            "history instead",
        )
    if action == "create":
        connection.execute(
            "UPDATE pages SET deleted_at = ? WHERE id = ?", (now, page_id)
        )
        index_page(connection, get_page(connection, page_id))
        return {"page_id": page_id, "reverted": "deleted"}
    restored: list[int] = []
    if action == "merge" and absorbed_json:
        absorbed = json.loads(absorbed_json)
        set_names(connection, page_id, page.name, absorbed["before_aliases"])
        connection.execute(
            "UPDATE pages SET deleted_at = NULL WHERE id = ?", (absorbed["page_id"],)
        )
        set_names(
            connection, absorbed["page_id"], absorbed["name"], absorbed["aliases"]
        )
        revise(connection, absorbed["page_id"], now, "person", note="revert")
        restored.append(absorbed["page_id"])
    connection.execute(
        "UPDATE pages SET text = ? WHERE id = ?", (before_text or "", page_id)
    )
    after = revise(connection, page_id, now, "person", run=run, note="revert")
    return {"page_id": page_id, "revision": after.revision, "restored": restored}
