"""Delete forever: a page's text, gone from the nightly runs' records too.

Besides the page and its revisions, the nightly runs' records keep text: a
change's before and after, a merge's absorbed page, refused plans.
`pages.delete_forever` calls these in its own transaction, so that no way of
deleting forever leaves the text behind. Functions of a connection, run on the
store's thread; no Home Assistant import.
"""

import json
import sqlite3
from typing import Any

from ..text import fold_name
from .page_reads import Page
from .revisions import revision_texts
from .text import content_lines, line_key


def page_line_keys(connection: sqlite3.Connection, page: Page) -> set[str]:
    """The keys of every line the page holds or ever held."""
    return {
        key
        for text in (page.text, *revision_texts(connection, page.id))
        for line in content_lines(text)
        if (key := line_key(line))
    }


def forget_in_runs(
    connection: sqlite3.Connection, page: Page, line_keys: set[str]
) -> None:
    """Remove the page's changes, names and lines from the runs' records."""
    _forget_changes(connection, page.id, line_keys)
    _forget_plans(connection, page.names | line_keys)


def _forget_changes(
    connection: sqlite3.Connection, page_id: int, secrets: set[str]
) -> None:
    """Drop the runs' changes of the page; strip its lines from other changes."""
    for row_id, page, before, after, absorbed, dropped in connection.execute(
        "SELECT id, page, before_text, after_text, absorbed, dropped "
        "FROM nightly_run_pages"
    ).fetchall():
        if page == page_id:
            connection.execute("DELETE FROM nightly_run_pages WHERE id = ?", (row_id,))
            continue
        if absorbed and json.loads(absorbed)["page_id"] == page_id:
            # The merge stays listed; what it absorbed is gone for good.
            gone = {"page_id": page_id, "name": json.loads(absorbed)["name"]}
            connection.execute(
                "UPDATE nightly_run_pages SET absorbed = ? WHERE id = ?",
                (json.dumps(gone | {"deleted_forever": True}), row_id),
            )
        lines = [d for d in json.loads(dropped) if line_key(d["line"]) not in secrets]
        kept = (_without(before, secrets), _without(after, secrets), json.dumps(lines))
        if kept != (before, after, dropped):
            connection.execute(
                "UPDATE nightly_run_pages SET before_text = ?, after_text = ?, "
                "dropped = ? WHERE id = ?",
                (*kept, row_id),
            )


def _forget_plans(connection: sqlite3.Connection, words: set[str]) -> None:
    """Drop the refused plans and refusals that named the page or held a line of it.

    Both are in a run's detail: the jobs registry keeps no refusal.
    """
    for run, detail_json in connection.execute(
        "SELECT id, detail FROM nightly_runs"
    ).fetchall():
        detail: dict[str, Any] = json.loads(detail_json)
        plans = detail.get("refused_plans") or []
        kept = [plan for plan in plans if not _mentions(plan, words)]
        refusals = detail.get("refusals") or []
        kept_refusals = [text for text in refusals if not _mentions(text, words)]
        if len(kept) == len(plans) and len(kept_refusals) == len(refusals):
            continue
        if plans:
            detail["refused_plans"] = kept
            detail["forgotten_plans"] = len(plans) - len(kept)
        if refusals:
            detail["refusals"] = kept_refusals
        connection.execute(
            "UPDATE nightly_runs SET detail = ? WHERE id = ?",
            (json.dumps(detail), run),
        )


def _mentions(value: Any, words: set[str]) -> bool:
    folded = fold_name(json.dumps(value, ensure_ascii=False))
    return any(word and word in folded for word in words)


def _without(text: str | None, secrets: set[str]) -> str | None:
    if text is None:
        return None
    return "\n".join(
        line for line in text.splitlines() if line_key(line) not in secrets
    )
