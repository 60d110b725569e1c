"""A page as the panel opens it: text, revisions, links and backlinks.

Functions of a database connection, run on the store's thread.
"""

import sqlite3
from typing import Any

from ..text import fold_name
from .page_reads import Page, find_page
from .revisions import revisions
from .text import links


def page_detail(connection: sqlite3.Connection, page: Page) -> dict[str, Any]:
    """A page with its text, revisions, links and backlinks."""
    return page.summary() | {
        "text": page.text,
        "revisions": revisions(connection, page.id),
        "links": outlinks(connection, page),
        "backlinks": backlinks(connection, page),
    }


def backlinks(connection: sqlite3.Connection, page: Page) -> list[dict[str, Any]]:
    """Return the live pages of its owner whose text links to `page` by any of its names.

    Another owner's [[same name]] is their own page's link.
    """
    names = page.names
    result = []
    for row in connection.execute(
        "SELECT id, name, text FROM pages "
        "WHERE deleted_at IS NULL AND id != ? AND user_id IS ?",
        (page.id, page.user_id),
    ):
        if names & {fold_name(link) for link in links(row[2])}:
            result.append({"page_id": row[0], "name": row[1]})
    return result


def outlinks(connection: sqlite3.Connection, page: Page) -> list[dict[str, Any]]:
    """Return the page's [[links]], each with the page it reaches, if any."""
    result = []
    for name in dict.fromkeys(links(page.text)):
        target = find_page(connection, name, page.user_id)
        live = target is not None and target.deleted_at is None
        result.append({"name": name, "page_id": target.id if live and target else None})
    return result
