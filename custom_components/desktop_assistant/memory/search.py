"""Recall: pages by name or alias, then by their words (FTS5), bounded.

Functions of a database connection, run on the store's thread.
"""

import sqlite3
from typing import Final

from ..reader import Reader
from ..text import ALL_STOP_WORDS, words
from .errors import PageError
from .page_reads import Page, find_page, get_page

RECALL_PAGES: Final = 5
RECALL_LIMIT: Final = 4000
# Matches beyond this are not counted ("50 more pages match").
RECALL_COUNT: Final = 50
# A word on more pages than this is too common to rank pages by.
COMMON_WORD_PAGES: Final = 200


def recall(
    connection: sqlite3.Connection, query: str, user_id: str | None = None
) -> tuple[list[Page], int]:
    """Return pages `user_id` reads by exact name or alias first, then by word search.

    Returns the pages and how many more matched than are returned.
    """
    found: list[Page] = []
    exact = find_page(connection, query, user_id)
    if exact is not None and exact.deleted_at is None:
        found.append(exact)
    terms = [word for word in words(query) if word not in ALL_STOP_WORDS]
    if not terms and not found:
        raise PageError(
            "no_words",
            "the query has only filler words; ask with the names or words to look for",
        )
    more = 0
    if terms:
        hits = _search(connection, terms, Reader(user_id))
        exact_id = found[0].id if found else None
        others = [page_id for page_id in hits if page_id != exact_id]
        shown = others[: RECALL_PAGES - len(found)]
        found += [get_page(connection, page_id) for page_id in shown]
        more = len(others) - len(shown)
    return found, more


def _search(
    connection: sqlite3.Connection, terms: list[str], reader: Reader
) -> list[int]:
    """Return the ids of pages `reader` reads matching any of the words, best first.

    Ranking (bm25) costs time per match, so words found on many pages are
    left out when rarer ones are asked for too; a query of common words
    only lists the newest pages that have the rarest of them.
    """

    def expression(term: str) -> str:
        return f'"{term}"*' if len(term) >= 4 else f'"{term}"'

    def pages_with(term: str) -> int:
        if len(term) >= 4:
            row = connection.execute(
                "SELECT sum(doc) FROM page_search_vocab WHERE term >= ? AND term < ?",
                (term, term + "\U0010ffff"),
            ).fetchone()
        else:
            row = connection.execute(
                "SELECT doc FROM page_search_vocab WHERE term = ?", (term,)
            ).fetchone()
        return int(row[0] or 0) if row else 0

    readable, params = reader.condition("pages.user_id")
    matching = (
        "SELECT page_search.rowid FROM page_search JOIN pages"
        " ON pages.id = page_search.rowid"
        f" WHERE page_search MATCH ? AND {readable}"
    )
    counted = sorted((pages_with(term), term) for term in dict.fromkeys(terms))
    rare = [term for count, term in counted if 0 < count <= COMMON_WORD_PAGES]
    if rare:
        return [
            row[0]
            for row in connection.execute(
                f"{matching} ORDER BY rank LIMIT ?",
                (" OR ".join(map(expression, rare)), *params, RECALL_COUNT),
            )
        ]
    common = [term for count, term in counted if count]
    if not common:
        return []
    return [
        row[0]
        for row in connection.execute(
            f"{matching} ORDER BY page_search.rowid DESC LIMIT ?",
            (expression(common[0]), *params, RECALL_COUNT),
        )
    ]


def recall_text(pages: list[Page], more: int) -> str:
    """Return recalled pages as the tool's answer, at most RECALL_LIMIT characters."""
    if not pages:
        return "No page matches. Nothing about this has been noted."
    parts: list[str] = []
    budget = RECALL_LIMIT
    for page in pages:
        aliases = f" (also: {', '.join(page.aliases)})" if page.aliases else ""
        head = f"# {page.name}{aliases} [{page.kind}]\n"
        body = page.text.strip() or "(empty)"
        room = budget - len(head) - 1
        if room <= 40:
            more += 1
            continue
        if len(body) > room:
            body = body[: room - 1].rstrip() + "…"
        parts.append(head + body)
        budget -= len(head) + len(body) + 2
    if more:
        parts.append(f"({more} more pages match; ask more precisely to see them.)")
    return "\n\n".join(parts)
