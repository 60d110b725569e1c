"""Revert: undo what one nightly run did to one page, as a new revision.

Functions of a connection, run on the store's thread. The run is the jobs
registry's id of it, as the Nightly page's URLs name it.
"""

import json
import sqlite3
from typing import Any

from ..errors import PageError
from ..page_reads import get_page
from ..pages import delete_page, edit_page, restore_page
from .runs import page_changes


def revert_page(
    connection: sqlite3.Connection, run: int, page_id: int, now: float
) -> dict[str, Any]:
    """Undo what a run did to a page, as a new revision.

    A page edited after the run is left alone and reported `edited_since`.
    Reverting a merge brings the absorbed page back with its names.
    """
    changes = page_changes(connection, run, page_id)
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
