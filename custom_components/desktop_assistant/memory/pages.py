"""Pages, revisions and tombstones: functions of a database connection.

They run on the store's thread (`Store.async_run`), each write in one
transaction. Nothing here imports Home Assistant; times and days come in as
arguments.
"""

from dataclasses import dataclass
import json
import sqlite3
from typing import Any, Final

from ..text import ALL_STOP_WORDS, fold_name, words
from .text import PROFILE, add_note, hint, links, note_line, tokens, unlink

PROFILE_NAME: Final = "Profile"
PAGE_KINDS: Final = ("person", "place", "project", "thing", "other")
AUTHORS: Final = ("remember", "extraction", "nightly", "person")
INDEX_SIZE: Final = 50
CONTEXT_LIMIT: Final = 10_000
RECALL_PAGES: Final = 5
RECALL_LIMIT: Final = 4000
# Matches beyond this are not counted ("50 more pages match").
RECALL_COUNT: Final = 50
# A word on more pages than this is too common to rank pages by.
COMMON_WORD_PAGES: Final = 200


INSTRUCTIONS: Final = (
    "Long-term memory. The profile below is what you know about the household; "
    "the index lists pages you can read with the recall tool. Before answering "
    "about anything in the index, or anything that might have been noted "
    "before, call recall. When the person asks you to remember something, or "
    "states a lasting fact about their world, call remember with the page it "
    "belongs to (`profile` for the household itself). Never claim to have "
    "noted something you did not pass to remember."
)


class MemoryError(Exception):
    """A request about memory that cannot be done; `code` names why."""

    def __init__(self, code: str, message: str) -> None:
        """Keep the code for the websocket API and tools."""
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Page:
    """A page as read from the database."""

    id: int
    name: str
    kind: str
    text: str
    aliases: tuple[str, ...]
    created_at: float
    updated_at: float
    revision: int
    deleted_at: float | None = None

    @property
    def is_profile(self) -> bool:
        """Whether this is the household's profile."""
        return self.kind == PROFILE

    def summary(self) -> dict[str, Any]:
        """The page without its text, as lists show it."""
        return {
            "page_id": self.id,
            "name": self.name,
            "type": self.kind,
            "aliases": list(self.aliases),
            "hint": hint(self.text),
            "updated_at": self.updated_at,
            "revision": self.revision,
            "deleted_at": self.deleted_at,
        }


_PAGE_COLUMNS = (
    "id, name, kind, text, created_at, updated_at, revision, deleted_at, "
    "(SELECT json_group_array(name) FROM page_names "
    "WHERE page = pages.id AND is_alias ORDER BY name) AS aliases"
)


def _page(row: sqlite3.Row | tuple[Any, ...]) -> Page:
    (id_, name, kind, text, created, updated, revision, deleted, aliases) = row
    return Page(
        id_,
        name,
        kind,
        text,
        tuple(json.loads(aliases)),
        created,
        updated,
        revision,
        deleted,
    )


def get_page(connection: sqlite3.Connection, page_id: int) -> Page:
    """Return a page by id (deleted or not), or raise not_found."""
    row = connection.execute(
        f"SELECT {_PAGE_COLUMNS} FROM pages WHERE id = ?", (page_id,)
    ).fetchone()
    if row is None:
        raise MemoryError("not_found", f"there is no page {page_id}")
    return _page(row)


def find_page(connection: sqlite3.Connection, name: str) -> Page | None:
    """Return the page with `name` as its name or alias (deleted ones too)."""
    if fold_name(name) == PROFILE:
        return profile_page(connection)
    row = connection.execute(
        f"SELECT {_PAGE_COLUMNS} FROM pages WHERE id = "
        "(SELECT page FROM page_names WHERE folded = ?)",
        (fold_name(name),),
    ).fetchone()
    return None if row is None else _page(row)


def profile_page(connection: sqlite3.Connection) -> Page | None:
    """Return the profile, if it was ever written."""
    row = connection.execute(
        f"SELECT {_PAGE_COLUMNS} FROM pages WHERE kind = ?", (PROFILE,)
    ).fetchone()
    return None if row is None else _page(row)


def is_tombstoned(connection: sqlite3.Connection, name: str) -> bool:
    """Whether `name` was deleted forever."""
    return (
        connection.execute(
            "SELECT 1 FROM tombstones WHERE folded = ?", (fold_name(name),)
        ).fetchone()
        is not None
    )


def tombstones(connection: sqlite3.Connection) -> frozenset[str]:
    """The folded names deleted forever."""
    return frozenset(
        row[0] for row in connection.execute("SELECT folded FROM tombstones")
    )


def _check_name_free(
    connection: sqlite3.Connection, name: str, page_id: int | None = None
) -> str:
    """Return the folded name, or raise when another page holds it."""
    key = fold_name(name)
    if not key:
        raise MemoryError("invalid_name", "a page needs a name")
    if key == PROFILE:
        raise MemoryError("name_taken", f"{name!r} is the household's profile")
    row = connection.execute(
        "SELECT page FROM page_names WHERE folded = ?", (key,)
    ).fetchone()
    if row is not None and row[0] != page_id:
        raise MemoryError("name_taken", f"{name!r} is already a page name or alias")
    return key


def set_names(
    connection: sqlite3.Connection, page_id: int, name: str, aliases: list[str]
) -> tuple[str, ...]:
    """Give the page these names (checked free), replacing the old ones."""
    keys = {_check_name_free(connection, name, page_id): name}
    for alias in aliases:
        key = _check_name_free(connection, alias, page_id)
        if key not in keys:
            keys[key] = alias.strip()
    connection.execute("DELETE FROM page_names WHERE page = ?", (page_id,))
    connection.executemany(
        "INSERT INTO page_names (folded, page, name, is_alias) VALUES (?, ?, ?, ?)",
        [
            (key, page_id, value, index > 0)
            for index, (key, value) in enumerate(keys.items())
        ],
    )
    return tuple(sorted(value for key, value in list(keys.items())[1:]))


def index_page(connection: sqlite3.Connection, page: Page) -> None:
    """Keep the search row of a page in step with it."""
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
        "run, source, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        ),
    )
    connection.execute(
        "UPDATE pages SET revision = ?, updated_at = ? WHERE id = ?",
        (cursor.lastrowid, now, page_id),
    )
    page = get_page(connection, page_id)
    index_page(connection, page)
    return page


def create_page(
    connection: sqlite3.Connection,
    name: str,
    kind: str,
    *,
    text: str,
    aliases: list[str],
    now: float,
    author: str,
    run: int | None = None,
    source: str | None = None,
    allow_tombstoned: bool = False,
) -> Page:
    """Create a page; a tombstoned name only when a person asks for it."""
    name = name.strip()
    if kind not in PAGE_KINDS:
        raise MemoryError("invalid_type", f"a page's type is one of {PAGE_KINDS}")
    for each in (name, *aliases):
        if is_tombstoned(connection, each):
            if not allow_tombstoned:
                raise MemoryError(
                    "tombstoned",
                    f"{each!r} was deleted forever; the assistant does not recreate it",
                )
            connection.execute(
                "DELETE FROM tombstones WHERE folded = ?", (fold_name(each),)
            )
    cursor = connection.execute(
        "INSERT INTO pages (name, kind, text, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (name, kind, text, now, now),
    )
    page_id = int(cursor.lastrowid or 0)
    set_names(connection, page_id, name, aliases)
    return revise(connection, page_id, now, author, run=run, source=source)


def ensure_profile(connection: sqlite3.Connection, now: float) -> Page:
    """Return the profile, created empty when it was never written."""
    if (page := profile_page(connection)) is not None:
        return page
    cursor = connection.execute(
        "INSERT INTO pages (name, kind, text, created_at, updated_at) "
        "VALUES (?, ?, '', ?, ?)",
        (PROFILE_NAME, PROFILE, now, now),
    )
    return get_page(connection, int(cursor.lastrowid or 0))


def remember(
    connection: sqlite3.Connection,
    page_name: str,
    fact: str,
    day: str,
    now: float,
    *,
    author: str = "remember",
    kind: str = "other",
    source: str | None = None,
) -> tuple[Page, bool]:
    """Append a dated note to a page, creating the page when needed.

    Returns the page and whether a note was added: the same note on the same
    day is not added twice.
    """
    fact = " ".join(fact.split())
    if not fact:
        raise MemoryError("invalid_fact", "there is no fact to remember")
    if not page_name.strip():
        raise MemoryError("invalid_name", "say which page the fact belongs to")
    line = note_line(day, fact)
    if fold_name(page_name) == PROFILE:
        page = ensure_profile(connection, now)
    elif (found := find_page(connection, page_name)) is not None:
        page = found
    elif is_tombstoned(connection, page_name):
        raise MemoryError(
            "tombstoned",
            f"{page_name!r} was deleted forever by the household; "
            "do not remember anything about it",
        )
    else:
        page = create_page(
            connection,
            page_name,
            kind if kind in PAGE_KINDS else "other",
            text=add_note("", line),
            aliases=[],
            now=now,
            author=author,
            source=source,
        )
        return page, True
    if page.deleted_at is not None:
        raise MemoryError(
            "deleted",
            f"the page {page.name!r} was deleted; it can be restored from "
            "the Assistant panel",
        )
    if fold_name(line) in {fold_name(existing) for existing in page.text.splitlines()}:
        return page, False
    connection.execute(
        "UPDATE pages SET text = ? WHERE id = ?",
        (add_note(page.text, line), page.id),
    )
    return revise(connection, page.id, now, author, source=source), True


def recall(connection: sqlite3.Connection, query: str) -> tuple[list[Page], int]:
    """Return pages by exact name or alias first, then by word search.

    Returns the pages and how many more matched than are returned.
    """
    found: list[Page] = []
    exact = find_page(connection, query)
    if exact is not None and exact.deleted_at is None:
        found.append(exact)
    terms = [word for word in words(query) if word not in ALL_STOP_WORDS]
    if not terms and not found:
        raise MemoryError(
            "no_words",
            "the query has only filler words; ask with the names or words to look for",
        )
    more = 0
    if terms:
        hits = _search(connection, terms)
        exact_id = found[0].id if found else None
        others = [page_id for page_id in hits if page_id != exact_id]
        shown = others[: RECALL_PAGES - len(found)]
        found += [get_page(connection, page_id) for page_id in shown]
        more = len(others) - len(shown)
    return found, more


def _search(connection: sqlite3.Connection, terms: list[str]) -> list[int]:
    """Return the ids of pages matching any of the words, best first.

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

    counted = sorted((pages_with(term), term) for term in dict.fromkeys(terms))
    rare = [term for count, term in counted if 0 < count <= COMMON_WORD_PAGES]
    if rare:
        return [
            row[0]
            for row in connection.execute(
                "SELECT rowid FROM page_search WHERE page_search MATCH ? "
                "ORDER BY rank LIMIT ?",
                (" OR ".join(map(expression, rare)), RECALL_COUNT),
            )
        ]
    common = [term for count, term in counted if count]
    if not common:
        return []
    return [
        row[0]
        for row in connection.execute(
            "SELECT rowid FROM page_search WHERE page_search MATCH ? "
            "ORDER BY rowid DESC LIMIT ?",
            (expression(common[0]), RECALL_COUNT),
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


def build_context(connection: sqlite3.Connection) -> str:
    """Return what the model sees of memory, within CONTEXT_LIMIT characters.

    The index is shortened first (the least recently updated pages go); the
    profile is cut only when the instructions and the profile alone are
    too long.
    """
    profile = profile_page(connection)
    profile_text = (profile.text.strip() if profile else "") or "(nothing yet)"
    rows = connection.execute(
        f"SELECT {_PAGE_COLUMNS} FROM pages WHERE deleted_at IS NULL AND kind != ? "
        "ORDER BY updated_at DESC, id DESC LIMIT ?",
        (PROFILE, INDEX_SIZE),
    ).fetchall()
    index = [index_line(_page(row)) for row in rows]
    head = f"{INSTRUCTIONS}\n\n## Profile\n"
    index_head = "\n\n## Index of pages (most recently updated first)\n"
    fixed = len(head) + len(index_head)
    room = CONTEXT_LIMIT - fixed
    if len(profile_text) > room:
        profile_text = profile_text[: room - 1] + "…"
    room -= len(profile_text)
    kept: list[str] = []
    for line in index:
        if len(line) + 1 > room:
            break
        kept.append(line)
        room -= len(line) + 1
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


def list_pages(connection: sqlite3.Connection) -> tuple[list[Page], list[Page]]:
    """Return the live pages (profile first, then by name) and the deleted ones."""
    rows = [
        _page(row)
        for row in connection.execute(
            f"SELECT {_PAGE_COLUMNS} FROM pages ORDER BY kind != ?, name COLLATE NOCASE",
            (PROFILE,),
        )
    ]
    return (
        [page for page in rows if page.deleted_at is None],
        [page for page in rows if page.deleted_at is not None],
    )


def revisions(connection: sqlite3.Connection, page_id: int) -> list[dict[str, Any]]:
    """Return a page's revisions, newest first."""
    return [
        {
            "revision": row[0],
            "at": row[1],
            "author": row[2],
            "name": row[3],
            "type": row[4],
            "aliases": json.loads(row[5]),
            "text": row[6],
            "run_id": row[7],
            "source": row[8],
        }
        for row in connection.execute(
            "SELECT id, at, author, name, kind, aliases, text, run, source "
            "FROM page_revisions WHERE page = ? ORDER BY id DESC",
            (page_id,),
        )
    ]


def backlinks(connection: sqlite3.Connection, page: Page) -> list[dict[str, Any]]:
    """Return the live pages whose text links to `page` by any of its names."""
    names = {fold_name(page.name), *(fold_name(alias) for alias in page.aliases)}
    if page.is_profile:
        names.add(PROFILE)
    result = []
    for row in connection.execute(
        "SELECT id, name, text FROM pages WHERE deleted_at IS NULL AND id != ?",
        (page.id,),
    ):
        if names & {fold_name(link) for link in links(row[2])}:
            result.append({"page_id": row[0], "name": row[1]})
    return result


def outlinks(connection: sqlite3.Connection, page: Page) -> list[dict[str, Any]]:
    """Return the page's [[links]], each with the page it reaches, if any."""
    result = []
    for name in dict.fromkeys(links(page.text)):
        target = find_page(connection, name)
        live = target is not None and target.deleted_at is None
        result.append({"name": name, "page_id": target.id if live and target else None})
    return result


def edit_page(
    connection: sqlite3.Connection,
    page_id: int,
    now: float,
    author: str,
    *,
    text: str | None = None,
    kind: str | None = None,
    aliases: list[str] | None = None,
    base_revision: int | None = None,
    run: int | None = None,
) -> Page:
    """Change a page's text, type or aliases as one new revision.

    With `base_revision`, refuses with `changed` when the page moved on since.
    """
    page = get_page(connection, page_id)
    if page.deleted_at is not None:
        raise MemoryError("deleted", f"the page {page.name!r} is deleted")
    if base_revision is not None and base_revision != page.revision:
        raise MemoryError(
            "changed", f"the page {page.name!r} changed since revision {base_revision}"
        )
    if kind is not None and not page.is_profile:
        if kind not in PAGE_KINDS:
            raise MemoryError("invalid_type", f"a page's type is one of {PAGE_KINDS}")
        connection.execute("UPDATE pages SET kind = ? WHERE id = ?", (kind, page_id))
    if text is not None:
        connection.execute("UPDATE pages SET text = ? WHERE id = ?", (text, page_id))
    if aliases is not None:
        for alias in aliases:
            if is_tombstoned(connection, alias) and author != "person":
                raise MemoryError("tombstoned", f"{alias!r} was deleted forever")
        set_names(connection, page_id, page.name, aliases)
    return revise(connection, page_id, now, author, run=run)


def rename_page(
    connection: sqlite3.Connection, page_id: int, name: str, now: float
) -> Page:
    """Rename a page; its old name stays as an alias so links keep working."""
    page = get_page(connection, page_id)
    if page.is_profile:
        raise MemoryError("profile", "the profile cannot be renamed")
    if page.deleted_at is not None:
        raise MemoryError("deleted", f"the page {page.name!r} is deleted")
    name = name.strip()
    _check_name_free(connection, name, page_id)
    aliases = [alias for alias in page.aliases if fold_name(alias) != fold_name(name)]
    if fold_name(page.name) != fold_name(name):
        aliases.append(page.name)
    connection.execute("UPDATE pages SET name = ? WHERE id = ?", (name, page_id))
    set_names(connection, page_id, name, aliases)
    return revise(connection, page_id, now, "person", note="renamed")


def delete_page(connection: sqlite3.Connection, page_id: int, now: float) -> Page:
    """Move a page to recently deleted; its names stay reserved for a restore."""
    page = get_page(connection, page_id)
    if page.is_profile:
        raise MemoryError("profile", "the profile cannot be deleted")
    connection.execute("UPDATE pages SET deleted_at = ? WHERE id = ?", (now, page_id))
    page = get_page(connection, page_id)
    index_page(connection, page)
    return page


def restore_page(connection: sqlite3.Connection, page_id: int, now: float) -> Page:
    """Bring a recently deleted page back."""
    page = get_page(connection, page_id)
    if page.deleted_at is None:
        return page
    if (
        not page.aliases
        and connection.execute(
            "SELECT 1 FROM page_names WHERE page = ?", (page_id,)
        ).fetchone()
        is None
    ):
        # Merged away by a nightly run: its names went to the other page.
        aliases = json.loads(
            connection.execute(
                "SELECT aliases FROM page_revisions WHERE page = ? ORDER BY id DESC",
                (page_id,),
            ).fetchone()[0]
        )
        set_names(connection, page_id, page.name, aliases)
    connection.execute("UPDATE pages SET deleted_at = NULL WHERE id = ?", (page_id,))
    return revise(connection, page_id, now, "person", note="restored")


def delete_forever(
    connection: sqlite3.Connection, page_id: int, confirm: str, now: float
) -> list[str]:
    """Remove a page and its history, unlink it, tombstone its names.

    `confirm` must be the page's name. Returns the names of the pages whose
    links to it became plain text.
    """
    page = get_page(connection, page_id)
    if page.is_profile:
        raise MemoryError("profile", "the profile cannot be deleted")
    if fold_name(confirm) != fold_name(page.name):
        raise MemoryError(
            "confirmation", f"type the page's name, {page.name!r}, to confirm"
        )
    names = {fold_name(page.name), *(fold_name(alias) for alias in page.aliases)}
    unlinked = []
    for row in connection.execute(
        "SELECT id, text FROM pages WHERE id != ?", (page_id,)
    ).fetchall():
        if (new_text := unlink(row[1], names)) != row[1]:
            connection.execute(
                "UPDATE pages SET text = ? WHERE id = ?", (new_text, row[0])
            )
            unlinked.append(revise(connection, row[0], now, "person").name)
    connection.executemany(
        "INSERT OR REPLACE INTO tombstones (folded, name, at) VALUES (?, ?, ?)",
        [(fold_name(each), each, now) for each in (page.name, *page.aliases)],
    )
    connection.execute("DELETE FROM page_search WHERE rowid = ?", (page_id,))
    connection.execute("DELETE FROM pages WHERE id = ?", (page_id,))
    return unlinked


def restore_revision(
    connection: sqlite3.Connection, page_id: int, revision: int, now: float
) -> Page:
    """Make an earlier revision's text and type the page's latest revision."""
    row = connection.execute(
        "SELECT kind, text FROM page_revisions WHERE id = ? AND page = ?",
        (revision, page_id),
    ).fetchone()
    if row is None:
        raise MemoryError("not_found", f"page {page_id} has no revision {revision}")
    return edit_page(connection, page_id, now, "person", kind=row[0], text=row[1])
