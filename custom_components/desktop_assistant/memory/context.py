"""What the model sees of memory: instructions, the profile, an index of pages.

Functions of a database connection, run on the store's thread.
"""

import sqlite3
from typing import Final

from ..reader import Reader
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
# A known person's turn: their own profile and pages come with the household's.
PERSON_INSTRUCTIONS: Final = (
    f"{INSTRUCTIONS} The person asking is known: what they say about "
    "themselves goes on their own pages (`profile` is then their own "
    "profile); pass `for: household` to remember a fact about the household "
    "instead."
)


def build_context(connection: sqlite3.Connection, user_id: str | None = None) -> str:
    """Return what the model sees of memory for a turn of `user_id`.

    That is the household's profile and pages, and a known person's own
    profile and pages, never another's (`reader.py`), within CONTEXT_LIMIT
    characters. The index is shortened first (the least recently updated
    pages go); the profiles are cut only when the instructions and the
    profiles alone are too long.
    """
    profile_text = _profile_text(connection, None)
    if user_id is not None:
        profile_text += (
            f"\n\n## Profile of the person asking\n{_profile_text(connection, user_id)}"
        )
    readable, params = Reader(user_id).condition("user_id")
    rows = connection.execute(
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE deleted_at IS NULL AND kind != ? "
        f"AND {readable} ORDER BY updated_at DESC, id DESC LIMIT ?",
        (PROFILE, *params, INDEX_SIZE),
    ).fetchall()
    index = [index_line(page_of_row(row)) for row in rows]
    instructions = INSTRUCTIONS if user_id is None else PERSON_INSTRUCTIONS
    head = f"{instructions}\n\n## Profile\n"
    index_head = "\n\n## Index of pages (most recently updated first)\n"
    fixed = len(head) + len(index_head)
    room = CONTEXT_LIMIT - fixed
    if len(profile_text) > room:
        profile_text = profile_text[: room - 1] + "…"
    room -= len(profile_text)
    kept = leading_fit(index, room, len("\n"))
    body = "\n".join(kept) if index else "(no pages)"
    return f"{head}{profile_text}{index_head}{body}"[:CONTEXT_LIMIT]


def _profile_text(connection: sqlite3.Connection, user_id: str | None) -> str:
    """The text of the household's profile or a person's, or that it is empty."""
    profile = profile_page(connection, user_id)
    return (profile.text.strip() if profile else "") or "(nothing yet)"


def owners_with_pages(connection: sqlite3.Connection) -> list[str]:
    """The user ids of the people who have pages of their own."""
    return [
        row[0]
        for row in connection.execute(
            "SELECT DISTINCT user_id FROM pages WHERE user_id IS NOT NULL"
        )
    ]


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
