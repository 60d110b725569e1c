"""Nightly runs in the database: what each changed, for revert and forget.

Every change a run makes is written with the change itself, so a run that
stops midway (a kill, a fault) still has its record and the panel can
revert it. The jobs registry keeps each run's trigger, times, outcome and
summary; a row here is keyed by the registry's id of its run (`job_run`).
The runs from before the registry were set aside by the migration and are
handed to it once (`set_aside_runs`, `link_runs`). Functions of a
connection, run on the store's thread; no Home Assistant import.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
import json
import sqlite3
from typing import Any, Final, NamedTuple

from ..errors import PageError
from ..page import get_page
from ..pages import delete_page, edit_page, restore_page

KEEP_RUNS: Final = 50
# What a run's outcome is: `ok`, `skipped`, `no_server`, `cancelled` or
# `failed: <reason>` (the panel reads them from memory/describe); the jobs
# registry keeps it.
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


def insert_run(connection: sqlite3.Connection, job_run: int | None) -> int:
    """Start a run's row, by the registry's id of the run; return its id."""
    cursor = connection.execute(
        "INSERT INTO nightly_runs (job_run) VALUES (?)", (job_run,)
    )
    return int(cursor.lastrowid or 0)


def finish_run(
    connection: sqlite3.Connection,
    run: int,
    *,
    detail: dict[str, Any],
    running: int | None = None,
) -> None:
    """Record a run's detail; keep the last KEEP_RUNS runs, and the one `running`."""
    connection.execute(
        "UPDATE nightly_runs SET detail = ? WHERE id = ?", (json.dumps(detail), run)
    )
    connection.execute(
        "DELETE FROM nightly_runs WHERE id IS NOT ? AND id NOT IN "
        "(SELECT id FROM nightly_runs ORDER BY id DESC LIMIT ?)",
        (running, KEEP_RUNS),
    )


def record_skipped(
    connection: sqlite3.Connection, job_run: int | None, running: int | None
) -> int:
    """Record a run that did not start because the run `running` was running."""
    run = insert_run(connection, job_run)
    finish_run(connection, run, detail={}, running=running)
    return run


def run_ids(connection: sqlite3.Connection, job_runs: list[int]) -> dict[int, int]:
    """The id of each kept run, by the registry's id of it."""
    marks = ", ".join("?" * len(job_runs))
    return dict(
        connection.execute(
            f"SELECT job_run, id FROM nightly_runs WHERE job_run IN ({marks})",
            job_runs,
        ).fetchall()
    )


def set_aside_runs(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    """The runs from before the registry, not handed to it yet."""
    return [
        {
            "run_id": row[0],
            "trigger": row[1],
            "started_at": row[2],
            "duration": row[3],
            "outcome": row[4],
            "summary": json.loads(row[5]),
        }
        for row in connection.execute(
            "SELECT run, trigger, started_at, duration, outcome, summary "
            "FROM nightly_runs_set_aside ORDER BY run"
        )
    ]


def link_runs(connection: sqlite3.Connection, job_runs: dict[int, int | None]) -> None:
    """Key runs set aside by the registry's id of each; they are handed over."""
    connection.executemany(
        "UPDATE nightly_runs SET job_run = ? WHERE id = ?",
        [(job_run, run) for run, job_run in job_runs.items()],
    )
    connection.executemany(
        "DELETE FROM nightly_runs_set_aside WHERE run = ?",
        [(run,) for run in job_runs],
    )


# A run's change to a page as `get_run` answers it, in its SELECT's order.
_PAGE_CHANGE_FIELDS: Final = (
    "page_id",
    "name",
    "action",
    "before",
    "after",
    "dropped",
    "sources",
    "absorbed",
)


def _page_change(row: Sequence[Any]) -> dict[str, Any]:
    """A row of nightly_run_pages as a dict, its JSON columns read."""
    change = dict(zip(_PAGE_CHANGE_FIELDS, row, strict=True))
    change["dropped"] = json.loads(change["dropped"])
    change["sources"] = json.loads(change["sources"])
    absorbed = change["absorbed"]
    change["absorbed"] = json.loads(absorbed) if absorbed else None
    return change


def get_run(connection: sqlite3.Connection, run: int) -> dict[str, Any]:
    """A run's registry id, detail, and each page it changed, dropped lines and sources."""
    row = connection.execute(
        "SELECT job_run, detail FROM nightly_runs WHERE id = ?", (run,)
    ).fetchone()
    if row is None:
        raise PageError("not_found", f"there is no run {run}")
    result = {"run_id": run, "job_run": row[0], "detail": json.loads(row[1])}
    result["pages"] = [
        _page_change(page_row)
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
