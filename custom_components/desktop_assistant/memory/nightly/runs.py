"""Nightly runs in the database: their rows, what each changed, revert, forget.

Every change a run makes is written with the change itself, so a run that
stops midway (a kill, a fault) still has its record and the panel can
revert it. The Jobs page reads each run's summary from the jobs registry's
`job_runs` instead; memory's own rows of runs from before the registry
are handed to it once (`list_runs`). Functions of a connection, run on the
store's thread; no Home Assistant import.
"""

from dataclasses import dataclass, field
import json
import sqlite3
from typing import Any, Final, NamedTuple

from ..errors import PageError
from ..page import get_page
from ..pages import delete_page, edit_page, restore_page

KEEP_RUNS: Final = 50
RUNNING: Final = "running"
# The outcome of a run found running at start: HA stopped or was killed.
INTERRUPTED: Final = "failed: interrupted"
# What a run's outcome is: `ok`, `skipped`, `no_server`, `cancelled` or
# `failed: <reason>` (the panel reads them from memory/describe).
OUTCOMES: Final = ("running", "ok", "skipped", "no_server", "cancelled", "failed")
SKIPPED_SUMMARY: Final = {"reason": "another run was in progress"}


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


def record_change(connection: sqlite3.Connection, run: int, change: PageChange) -> None:
    """Write what a run did to a page, in the transaction of the change itself."""
    connection.execute(
        "INSERT INTO nightly_run_pages (run, page, page_name, action, before_text, "
        "after_text, before_revision, after_revision, dropped, sources, absorbed) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        ),
    )


def record_note(
    connection: sqlite3.Connection,
    run: int,
    page_id: int,
    before_text: str | None,
    source: str,
) -> None:
    """Add a note extraction wrote to the run's change of that page."""
    page = get_page(connection, page_id)
    row = next(
        (
            row
            for row in _page_changes(connection, run, page_id)
            if row.action == "notes"
        ),
        None,
    )
    if row is None:
        record_change(
            connection,
            run,
            PageChange(
                page.id,
                page.name,
                "notes",
                before_text,
                page.text,
                None,
                page.revision,
                sources=[source],
            ),
        )
        return
    sources = json.loads(row.sources)
    if source not in sources:
        sources.append(source)
    connection.execute(
        "UPDATE nightly_run_pages SET after_text = ?, after_revision = ?, "
        "sources = ? WHERE id = ?",
        (page.text, page.revision, json.dumps(sources), row.id),
    )


class _ChangeRow(NamedTuple):
    """A row of nightly_run_pages, as reverting and adding notes read it."""

    id: int
    action: str
    before_text: str | None
    after_revision: int | None
    sources: str
    absorbed: str | None


def _page_changes(
    connection: sqlite3.Connection, run: int, page_id: int
) -> list[_ChangeRow]:
    """What a run did to one page, in the order it did it."""
    return [
        _ChangeRow(*row)
        for row in connection.execute(
            "SELECT id, action, before_text, after_revision, sources, absorbed "
            "FROM nightly_run_pages WHERE run = ? AND page = ? ORDER BY id",
            (run, page_id),
        )
    ]


def insert_run(connection: sqlite3.Connection, trigger: str, now: float) -> int:
    """Start a run's row; return its id."""
    cursor = connection.execute(
        "INSERT INTO nightly_runs (trigger, started_at, outcome) VALUES (?, ?, ?)",
        (trigger, now, RUNNING),
    )
    return int(cursor.lastrowid or 0)


def start_run(
    connection: sqlite3.Connection,
    trigger: str,
    now: float,
    unrecorded: dict[int, str],
) -> int:
    """Start a run's row, ending first the runs whose end could not be written."""
    connection.executemany(
        "UPDATE nightly_runs SET outcome = ? WHERE id = ? AND outcome = ?",
        [(outcome, run, RUNNING) for run, outcome in unrecorded.items()],
    )
    return insert_run(connection, trigger, now)


def finish_run(
    connection: sqlite3.Connection,
    run: int,
    *,
    duration: float,
    outcome: str,
    summary: dict[str, Any],
    detail: dict[str, Any],
) -> None:
    """Record how a run ended; keep the last KEEP_RUNS runs, and any still running."""
    connection.execute(
        "UPDATE nightly_runs SET duration = ?, outcome = ?, summary = ?, detail = ? "
        "WHERE id = ?",
        (duration, outcome, json.dumps(summary), json.dumps(detail), run),
    )
    connection.execute(
        "DELETE FROM nightly_runs WHERE outcome != ? AND id NOT IN "
        "(SELECT id FROM nightly_runs ORDER BY id DESC LIMIT ?)",
        (RUNNING, KEEP_RUNS),
    )


def end_interrupted(connection: sqlite3.Connection) -> int:
    """Mark the runs a stop or kill left running; return how many."""
    return connection.execute(
        "UPDATE nightly_runs SET outcome = ? WHERE outcome = ?",
        (INTERRUPTED, RUNNING),
    ).rowcount


def record_skipped(connection: sqlite3.Connection, trigger: str, now: float) -> int:
    """Record a run that did not start because another was running."""
    run = insert_run(connection, trigger, now)
    finish_run(
        connection,
        run,
        duration=0.0,
        outcome="skipped",
        summary=SKIPPED_SUMMARY,
        detail={},
    )
    return run


def last_run_start(connection: sqlite3.Connection) -> float | None:
    """When the last run that was not skipped started."""
    row = connection.execute(
        "SELECT max(started_at) FROM nightly_runs WHERE outcome != 'skipped'"
    ).fetchone()
    return row[0]


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


def get_run(connection: sqlite3.Connection, run: int) -> dict[str, Any]:
    """A run with each page it changed, dropped lines and sources (ids)."""
    row = connection.execute(
        f"SELECT {_RUN_COLUMNS} FROM nightly_runs WHERE id = ?", (run,)
    ).fetchone()
    if row is None:
        raise PageError("not_found", f"there is no run {run}")
    result = _run_dict(row) | {"detail": json.loads(row[6])}
    result["pages"] = [
        {
            "page_id": page_row[0],
            "name": page_row[1],
            "action": page_row[2],
            "before": page_row[3],
            "after": page_row[4],
            "dropped": json.loads(page_row[5]),
            "sources": json.loads(page_row[6]),
            "absorbed": json.loads(page_row[7]) if page_row[7] else None,
        }
        for page_row in connection.execute(
            "SELECT page, page_name, action, before_text, after_text, dropped, "
            "sources, absorbed FROM nightly_run_pages WHERE run = ? ORDER BY id",
            (run,),
        )
    ]
    return result


def revert_page(
    connection: sqlite3.Connection, run: int, page_id: int, now: float
) -> dict[str, Any]:
    """Undo what a run did to a page, as a new revision.

    A page edited after the run is left alone and reported `edited_since`.
    Reverting a merge brings the absorbed page back with its names.
    """
    changes = _page_changes(connection, run, page_id)
    if not changes:
        raise PageError("not_found", f"run {run} did not change page {page_id}")
    change = changes[0]
    page = get_page(connection, page_id)
    if page.revision != change.after_revision or page.deleted_at is not None:
        raise PageError(
            "edited_since",
            f"the page {page.name!r} changed after the run; restore it from its "
            "history instead",
        )
    if change.action == "create":
        delete_page(connection, page_id, now)
        return {"page_id": page_id, "reverted": "deleted"}
    absorbed = (
        json.loads(change.absorbed)
        if change.action == "merge" and change.absorbed
        else None
    )
    if absorbed is not None:
        _check_absorbed_exists(connection, absorbed)
    after = edit_page(
        connection,
        page_id,
        now,
        "person",
        text=change.before_text or "",
        aliases=None if absorbed is None else absorbed["before_aliases"],
        run=run,
        note="revert",
    )
    restored: list[int] = []
    if absorbed is not None:
        restore_page(connection, absorbed["page_id"], now, aliases=absorbed["aliases"])
        restored.append(absorbed["page_id"])
    return {"page_id": page_id, "revision": after.revision, "restored": restored}


def _check_absorbed_exists(
    connection: sqlite3.Connection, absorbed: dict[str, Any]
) -> None:
    try:
        get_page(connection, absorbed["page_id"])
    except PageError:
        raise PageError(
            "absorbed_gone",
            f"the page {absorbed['name']!r} this merge absorbed was deleted "
            "forever, so the merge cannot be undone; edit the page instead",
        ) from None
