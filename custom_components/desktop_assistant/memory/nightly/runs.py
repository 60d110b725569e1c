"""Nightly runs in the database: what each changed, for revert and forget.

Every change a run makes is written with the change itself, so a run that
stops midway (a kill, a fault) still has its record and the panel can
revert it. The jobs registry keeps each run's trigger, times, outcome and
summary; a row here has the registry's id of its run, and goes when the
registry no longer keeps that run. Functions of a connection, run on the
store's thread; no Home Assistant import.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
import json
import sqlite3
from typing import Any, Final, NamedTuple

from ..page_reads import get_page

# The registry's name of the nightly pass.
JOB_NIGHTLY: Final = "nightly"


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
            for row in page_changes(connection, run, page_id)
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


class ChangeRow(NamedTuple):
    """A row of nightly_run_pages, as reverting and adding notes read it."""

    id: int
    action: str
    before_text: str | None
    after_revision: int | None
    sources: str
    absorbed: str | None


def page_changes(
    connection: sqlite3.Connection, run: int, page_id: int
) -> list[ChangeRow]:
    """What a run did to one page, in the order it did it."""
    return [
        ChangeRow(*row)
        for row in connection.execute(
            "SELECT id, action, before_text, after_revision, sources, absorbed "
            "FROM nightly_run_pages WHERE run = ? AND page = ? ORDER BY id",
            (run, page_id),
        )
    ]


def insert_run(connection: sqlite3.Connection, run: int) -> None:
    """Start the row of the registry's run `run`."""
    connection.execute("INSERT INTO nightly_runs (id) VALUES (?)", (run,))


def finish_run(
    connection: sqlite3.Connection,
    run: int,
    *,
    detail: dict[str, Any],
    kept: list[int],
) -> None:
    """Record a run's detail; forget the runs the registry no longer keeps."""
    connection.execute(
        "UPDATE nightly_runs SET detail = ? WHERE id = ?", (json.dumps(detail), run)
    )
    connection.execute(
        "DELETE FROM nightly_runs WHERE id != ? AND id NOT IN "
        "(SELECT value FROM json_each(?))",
        (run, json.dumps(kept)),
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
    """A run's detail, and each page it changed, dropped lines and sources.

    A run memory kept nothing of (one skipped while another ran) changed
    nothing.
    """
    row = connection.execute(
        "SELECT detail FROM nightly_runs WHERE id = ?", (run,)
    ).fetchone()
    result = {"run_id": run, "detail": json.loads(row[0]) if row else {}}
    result["pages"] = [
        _page_change(page_row)
        for page_row in connection.execute(
            "SELECT page, page_name, action, before_text, after_text, dropped, "
            "sources, absorbed FROM nightly_run_pages WHERE run = ? ORDER BY id",
            (run,),
        )
    ]
    return result
