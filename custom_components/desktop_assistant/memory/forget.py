"""Delete forever: the page, and its text everywhere memory keeps it.

Besides the page and its revisions, the nightly runs' records keep text: a
change's before and after, a merge's absorbed page, refused plans. A page
deleted forever leaves none of it behind. Functions of a connection, run on
the store's thread in one transaction; no Home Assistant import.
"""

import json
import sqlite3
from typing import Any

from ..text import fold_name
from .page import get_page
from .pages import delete_forever
from .revisions import revision_texts
from .text import content_lines, line_key


def delete_everywhere(
    connection: sqlite3.Connection, page_id: int, confirm: str, now: float
) -> list[str]:
    """Delete a page forever and remove its text from the runs' records.

    Returns the names of the pages whose links to it became plain text.
    """
    page = get_page(connection, page_id)
    secrets = {
        key
        for text in (page.text, *revision_texts(connection, page_id))
        for line in content_lines(text)
        if (key := line_key(line))
    }
    names = page.names
    unlinked = delete_forever(connection, page_id, confirm, now)
    _forget_changes(connection, page_id, secrets)
    _forget_plans(connection, names | secrets)
    return unlinked


def _forget_changes(
    connection: sqlite3.Connection, page_id: int, secrets: set[str]
) -> None:
    """Drop the runs' changes of the page; strip its lines from other changes."""
    for row_id, page, before, after, absorbed in connection.execute(
        "SELECT id, page, before_text, after_text, absorbed FROM nightly_run_pages"
    ).fetchall():
        absorbed_id = json.loads(absorbed)["page_id"] if absorbed else None
        if page_id in (page, absorbed_id):
            connection.execute("DELETE FROM nightly_run_pages WHERE id = ?", (row_id,))
            continue
        kept = (_without(before, secrets), _without(after, secrets))
        if kept != (before, after):
            connection.execute(
                "UPDATE nightly_run_pages SET before_text = ?, after_text = ? "
                "WHERE id = ?",
                (*kept, row_id),
            )


def _forget_plans(connection: sqlite3.Connection, words: set[str]) -> None:
    """Drop the refused plans that named the page or held a line of it."""
    for run, detail_json in connection.execute(
        "SELECT id, detail FROM nightly_runs"
    ).fetchall():
        detail: dict[str, Any] = json.loads(detail_json)
        plans = detail.get("refused_plans") or []
        kept = [
            plan
            for plan in plans
            if not _mentions(json.dumps(plan, ensure_ascii=False), words)
        ]
        if len(kept) != len(plans):
            detail["refused_plans"] = kept
            detail["forgotten_plans"] = len(plans) - len(kept)
            connection.execute(
                "UPDATE nightly_runs SET detail = ? WHERE id = ?",
                (json.dumps(detail), run),
            )


def _mentions(text: str, words: set[str]) -> bool:
    folded = fold_name(text)
    return any(word and word in folded for word in words)


def _without(text: str | None, secrets: set[str]) -> str | None:
    if text is None:
        return None
    return "\n".join(
        line for line in text.splitlines() if line_key(line) not in secrets
    )
