"""The tidy-up's side of the database: what the model is shown, applying a plan.

A page too long for the request is shown by its newest lines (its notes are
at the end); the rest stays hidden and a rewrite keeps it as it is. Every
change is written to the run's record in the same transaction. Functions of
a connection, run on the store's thread; no Home Assistant import.
"""

import sqlite3
from typing import Final

from ...text import fold_name
from ..errors import PageError
from ..page_reads import Page, get_page, list_pages, profile_page
from ..pages import create_page, delete_page, edit_page
from .plan import Create, MemoryState, Merge, PageState, Plan, Rewrite
from .runs import PageChange, record_change

# The consolidation request's pages and names, in characters (about a
# quarter as many tokens), so that it fits a 4096-token context.
PLAN_CHARS: Final = 9000
# At most this much of one page, so that other pages and names fit too.
PAGE_CHARS: Final = 6000


def page_state(page: Page, text: str | None = None, hidden: str = "") -> PageState:
    """A page as the plan checks see it."""
    return PageState(
        page.name,
        page.text if text is None else text,
        page.revision,
        page.aliases,
        page.is_profile,
        page.deleted_at is not None,
        hidden,
        page.kind,
    )


def memory_state(
    connection: sqlite3.Connection, budget: int, shown: tuple[PageState, ...] = ()
) -> MemoryState:
    """Memory as the plan checks see it; `shown` replaces pages shown in part."""
    live, deleted = list_pages(connection)
    by_name = {fold_name(state.name): state for state in shown}
    states = tuple(
        by_name.get(fold_name(page.name)) or page_state(page)
        for page in (*live, *deleted)
    )
    tombstoned = frozenset(
        row[0] for row in connection.execute("SELECT folded FROM tombstones")
    )
    return MemoryState(states, tombstoned, budget)


def pages_to_consolidate(
    connection: sqlite3.Connection, since_revision: int, limit: int
) -> list[Page]:
    """The household's profile and pages changed since the last tidy-up, newest first.

    A person's pages are never shown to a plan of the household's.
    """
    profile = profile_page(connection)
    rows = connection.execute(
        "SELECT DISTINCT page FROM page_revisions WHERE id > ? ORDER BY id DESC",
        (since_revision,),
    ).fetchall()
    pages: list[Page] = [profile] if profile is not None else []
    for (page_id,) in rows:
        page = get_page(connection, page_id)
        if (
            page.deleted_at is None
            and not page.is_profile
            and page.user_id is None
            and len(pages) < limit
        ):
            pages.append(page)
    return pages


def shown_pages(pages: list[Page], room: int = PLAN_CHARS) -> tuple[PageState, ...]:
    """The pages as the request shows them, within `room` characters.

    The first page (the profile) is always shown, by its newest lines when
    it is too long; later pages that do not fit whole wait for a later night.
    """
    shown: list[PageState] = []
    for page in pages:
        text = page.text.strip()
        if shown and len(text) > min(room, PAGE_CHARS):
            break
        lines = text.splitlines()
        kept: list[str] = []
        size = 0
        while lines and size + len(lines[-1]) + 1 <= min(room, PAGE_CHARS):
            size += len(lines[-1]) + 1
            kept.insert(0, lines.pop())
        if not kept:
            continue
        shown.append(page_state(page, "\n".join(kept), "\n".join(lines)))
        room -= size + len(page.name) + 40
    return tuple(shown)


def apply_plan(
    connection: sqlite3.Connection,
    plan: Plan,
    planned: MemoryState,
    now: float,
    run: int,
) -> None:
    """Apply a checked plan (the caller holds one transaction), recording each change."""
    for rewrite in plan.rewrites:
        record_change(connection, run, _rewrite(connection, rewrite, planned, now, run))
    for create in plan.creates:
        record_change(connection, run, _create(connection, create, now, run))
    for merge in plan.merges:
        record_change(connection, run, _merge(connection, merge, now, run))


def _find(connection: sqlite3.Connection, name: str) -> Page:
    """The live page a plan names; raise when it is gone or deleted."""
    row = connection.execute(
        "SELECT page FROM page_names WHERE folded = ?", (fold_name(name),)
    ).fetchone()
    page = get_page(connection, row[0]) if row else profile_page(connection)
    if page is None or (row is None and fold_name(name) != fold_name(page.name)):
        raise PageError("not_found", f"there is no page {name!r}")
    if page.deleted_at is not None:
        raise PageError("deleted", f"the page {page.name!r} is deleted")
    return page


def _rewrite(
    connection: sqlite3.Connection,
    rewrite: Rewrite,
    planned: MemoryState,
    now: float,
    run: int,
) -> PageChange:
    page = _find(connection, rewrite.page)
    seen = planned.find(rewrite.page)
    hidden = seen.hidden if seen is not None else ""
    text = f"{hidden}\n{rewrite.text.strip()}\n" if hidden else rewrite.text
    after = edit_page(connection, page.id, now, "nightly", text=text, run=run)
    return PageChange(
        page.id,
        page.name,
        "rewrite",
        page.text,
        after.text,
        page.revision,
        after.revision,
        [{"line": d.line, "reason": d.reason} for d in rewrite.dropped],
    )


def _create(
    connection: sqlite3.Connection, create: Create, now: float, run: int
) -> PageChange:
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
    return PageChange(
        page.id, page.name, "create", None, page.text, None, page.revision
    )


def _merge(
    connection: sqlite3.Connection, merge: Merge, now: float, run: int
) -> PageChange:
    into, absorb = _find(connection, merge.into), _find(connection, merge.absorb)
    delete_page(connection, absorb.id, now, release_names=True)
    after = edit_page(
        connection,
        into.id,
        now,
        "nightly",
        text=merge.text,
        aliases=[*into.aliases, absorb.name, *absorb.aliases],
        run=run,
        note="merge",
    )
    return PageChange(
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
