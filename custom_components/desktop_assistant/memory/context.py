"""What the model sees of memory: instructions, the profile, an index of pages.

Functions of a database connection, run on the store's thread.
"""

import sqlite3
from typing import Final

from .page_reads import PAGE_COLUMNS, Page, page_of_row, profile_page
from .text import PROFILE, hint, leading_fit, tokens

INDEX_SIZE: Final = 50
CONTEXT_LIMIT: Final = 10_000

INSTRUCTIONS: Final = (
    "Long-term memory. The profile below is what you know about the household; "
    "the index lists pages you can read with the recall tool. Before answering "
    "about anything in the index, or anything that might have been noted "
    "before, call recall. When the person asks you to remember something, or "
    "states a lasting fact about their world, call remember with the page it "
    "belongs to (`profile` for the household itself). Never claim to have "
    "noted something you did not pass to remember."
)


def build_context(connection: sqlite3.Connection) -> str:
    """Return what the model sees of memory, within CONTEXT_LIMIT characters.

    The index is shortened first (the least recently updated pages go); the
    profile is cut only when the instructions and the profile alone are
    too long.
    """
    profile = profile_page(connection)
    profile_text = (profile.text.strip() if profile else "") or "(nothing yet)"
    rows = connection.execute(
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE deleted_at IS NULL AND kind != ? "
        "ORDER BY updated_at DESC, id DESC LIMIT ?",
        (PROFILE, INDEX_SIZE),
    ).fetchall()
    index = [index_line(page_of_row(row)) for row in rows]
    head = f"{INSTRUCTIONS}\n\n## Profile\n"
    index_head = "\n\n## Index of pages (most recently updated first)\n"
    fixed = len(head) + len(index_head)
    room = CONTEXT_LIMIT - fixed
    if len(profile_text) > room:
        profile_text = profile_text[: room - 1] + "…"
    room -= len(profile_text)
    kept = leading_fit(index, room, len("\n"))
    body = "\n".join(kept) if index else "(no pages)"
    return f"{head}{profile_text}{index_head}{body}"[:CONTEXT_LIMIT]


def index_line(page: Page) -> str:
    """Return a page's line of the index: name, type, aliases, a hint."""
    aliases = f"; also {', '.join(page.aliases)}" if page.aliases else ""
    line_hint = hint(page.text, 60)
    return f"- {page.name} ({page.kind}{aliases})" + (
        f": {line_hint}" if line_hint else ""
    )


def profile_usage(connection: sqlite3.Connection) -> int:
    """The profile's estimated tokens."""
    profile = profile_page(connection)
    return tokens(profile.text) if profile else 0
