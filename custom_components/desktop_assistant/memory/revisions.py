"""A page's revisions and its search row, kept in step with every change.

Functions of a database connection, run on the store's thread.
"""

import json
import sqlite3
from typing import Any, Final

from ..store.rows import newest_rows
from .page_reads import Page, get_page

# What the panel gets of a revision: its field, then its column.
_REVISION_FIELDS: Final = {
    "revision": "id",
    "at": "at",
    "author": "author",
    "name": "name",
    "type": "kind",
    "aliases": "aliases",
    "text": "text",
    "run_id": "run",
    "source": "source",
    "user_id": "user_id",
}


def index_page(connection: sqlite3.Connection, page: Page) -> None:
    """Keep the search row of a page in step with it (none while deleted)."""
    connection.execute("DELETE FROM page_search WHERE rowid = ?", (page.id,))
    if page.deleted_at is None:
        connection.execute(
            "INSERT INTO page_search (rowid, names, text) VALUES (?, ?, ?)",
            (page.id, " ".join((page.name, *page.aliases)), page.text),
        )


def revise(
    connection: sqlite3.Connection,
    page_id: int,
    now: float,
    author: str,
    *,
    run: int | None = None,
    source: str | None = None,
    note: str | None = None,
) -> Page:
    """Record the page as it now is as a new revision; return it."""
    page = get_page(connection, page_id)
    cursor = connection.execute(
        "INSERT INTO page_revisions (page, at, author, name, kind, aliases, text, "
        "run, source, note, user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            page_id,
            now,
            author,
            page.name,
            page.kind,
            json.dumps(page.aliases),
            page.text,
            run,
            source,
            note,
            page.user_id,
        ),
    )
    connection.execute(
        "UPDATE pages SET revision = ?, updated_at = ? WHERE id = ?",
        (cursor.lastrowid, now, page_id),
    )
    page = get_page(connection, page_id)
    index_page(connection, page)
    return page


def revisions(connection: sqlite3.Connection, page_id: int) -> list[dict[str, Any]]:
    """Return a page's revisions, newest first."""
    found = newest_rows(
        connection, "page_revisions", _REVISION_FIELDS, key="page", value=page_id
    )
    for revision in found:
        revision["aliases"] = json.loads(revision["aliases"])
    return found


def revision_texts(connection: sqlite3.Connection, page_id: int) -> list[str]:
    """Every text a page ever had, for removing it everywhere else."""
    return [
        row[0]
        for row in connection.execute(
            "SELECT text FROM page_revisions WHERE page = ?", (page_id,)
        )
    ]


def latest_aliases(connection: sqlite3.Connection, page_id: int) -> list[str]:
    """The aliases of a page's latest revision."""
    row = connection.execute(
        "SELECT aliases FROM page_revisions WHERE page = ? ORDER BY id DESC",
        (page_id,),
    ).fetchone()
    return json.loads(row[0]) if row else []


def latest_revision(connection: sqlite3.Connection) -> int:
    """The newest revision id of any page."""
    return int(
        connection.execute("SELECT max(id) FROM page_revisions").fetchone()[0] or 0
    )
