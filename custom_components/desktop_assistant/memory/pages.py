"""Writing pages: create, note, edit, rename, delete, restore, delete forever.

Functions of a database connection, run on the store's thread inside the
caller's transaction (`Memory.async_write`). Nothing here imports Home
Assistant; times and days come in as arguments.
"""

import sqlite3
from typing import Final

from ..text import ALL_STOP_WORDS, fold_name, words
from .errors import PageError
from .forget import forget_in_runs, page_line_keys
from .page_reads import (
    PAGE_KINDS,
    PROFILE_NAME,
    Page,
    get_page,
    is_tombstoned,
    name_key,
    page_named,
    profile_page,
)
from .revisions import index_page, latest_aliases, revise
from .text import PROFILE, add_note, line_key, note_line, unlink

# A page's name or alias: one line, short enough for the model's index.
NAME_CHARS: Final = 80
# One note: a short sentence, not a document.
FACT_CHARS: Final = 500


def check_name(name: str) -> str:
    """Return the name with its spaces tidied, or raise invalid_name."""
    if any(not character.isprintable() and character != " " for character in name):
        raise PageError("invalid_name", "a page name is one line of text")
    name = " ".join(name.split())
    if not name:
        raise PageError("invalid_name", "a page needs a name")
    if len(name) > NAME_CHARS:
        raise PageError(
            "invalid_name", f"a page name is at most {NAME_CHARS} characters"
        )
    return name


def _check_name_free(
    connection: sqlite3.Connection, name: str, page_id: int, owner: str | None
) -> str:
    """Return the name's key, or raise when it is no name or another of `owner`'s pages holds it."""
    if fold_name(check_name(name)) == PROFILE:
        raise PageError("name_taken", f"{name!r} is the household's profile")
    key = name_key(name, owner)
    row = connection.execute(
        "SELECT page FROM page_names WHERE folded = ?", (key,)
    ).fetchone()
    if row is not None and row[0] != page_id:
        raise PageError("name_taken", f"{name!r} is already a page name or alias")
    return key


def set_names(
    connection: sqlite3.Connection, page_id: int, name: str, aliases: list[str]
) -> tuple[str, ...]:
    """Give the page these names (checked free among its owner's), replacing the old ones."""
    (owner,) = connection.execute(
        "SELECT user_id FROM pages WHERE id = ?", (page_id,)
    ).fetchone()
    keys = {_check_name_free(connection, name, page_id, owner): check_name(name)}
    for alias in aliases:
        key = _check_name_free(connection, alias, page_id, owner)
        if key not in keys:
            keys[key] = check_name(alias)
    connection.execute("DELETE FROM page_names WHERE page = ?", (page_id,))
    connection.executemany(
        "INSERT INTO page_names (folded, page, name, is_alias) VALUES (?, ?, ?, ?)",
        [
            (key, page_id, value, index > 0)
            for index, (key, value) in enumerate(keys.items())
        ],
    )
    return tuple(sorted(value for key, value in list(keys.items())[1:]))


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
    user_id: str | None = None,
) -> Page:
    """Create `user_id`'s page (None: the household's).

    A tombstoned name only when a person asks for it.
    """
    name = check_name(name)
    if kind not in PAGE_KINDS:
        raise PageError("invalid_type", f"a page's type is one of {PAGE_KINDS}")
    for each in (name, *aliases):
        if is_tombstoned(connection, each, user_id):
            if not allow_tombstoned:
                raise PageError(
                    "tombstoned",
                    f"{each!r} was deleted forever; the assistant does not recreate it",
                )
            connection.execute(
                "DELETE FROM tombstones WHERE folded = ?", (name_key(each, user_id),)
            )
    cursor = connection.execute(
        "INSERT INTO pages (name, kind, text, created_at, updated_at, user_id) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (name, kind, text, now, now, user_id),
    )
    page_id = int(cursor.lastrowid or 0)
    set_names(connection, page_id, name, aliases)
    return revise(connection, page_id, now, author, run=run, source=source)


def ensure_profile(
    connection: sqlite3.Connection, now: float, user_id: str | None = None
) -> Page:
    """Return the household's profile, or a person's, created empty when there is none."""
    if (page := profile_page(connection, user_id)) is not None:
        return page
    cursor = connection.execute(
        "INSERT INTO pages (name, kind, text, created_at, updated_at, user_id) "
        "VALUES (?, ?, '', ?, ?, ?)",
        (PROFILE_NAME, PROFILE, now, now, user_id),
    )
    return get_page(connection, int(cursor.lastrowid or 0))


def _page_to_note_on(
    connection: sqlite3.Connection, page_name: str, now: float, owner: str | None
) -> Page | None:
    """`owner`'s page a note goes on; None when it is new. Raises for a forbidden one."""
    if fold_name(page_name) == PROFILE:
        return ensure_profile(connection, now, owner)
    if (page := page_named(connection, page_name, owner)) is None:
        if is_tombstoned(connection, page_name, owner):
            raise PageError(
                "tombstoned",
                f"{page_name!r} was deleted forever by the household; "
                "do not remember anything about it",
            )
        return None
    if page.deleted_at is not None:
        raise PageError(
            "deleted",
            f"the page {page.name!r} was deleted; it can be restored from "
            "the Assistant panel",
        )
    return page


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
    user_id: str | None = None,
) -> tuple[Page, bool]:
    """Append a dated note to `user_id`'s page (None: the household's).

    The page is created when needed. Returns the page and whether a note was
    added: the same note on the same day is not added twice.
    """
    fact = " ".join(fact.split())
    if not fact:
        raise PageError("invalid_fact", "there is no fact to remember")
    if len(fact) > FACT_CHARS:
        raise PageError(
            "invalid_fact",
            f"a fact is one short sentence, at most {FACT_CHARS} characters",
        )
    page_name = check_name(page_name)
    line = note_line(day, fact)
    page = _page_to_note_on(connection, page_name, now, user_id)
    if page is None:
        page = create_page(
            connection,
            page_name,
            kind if kind in PAGE_KINDS else "other",
            text=add_note("", line),
            aliases=[],
            now=now,
            author=author,
            source=source,
            user_id=user_id,
        )
        return page, True
    if fold_name(line) in {fold_name(existing) for existing in page.text.splitlines()}:
        return page, False
    connection.execute(
        "UPDATE pages SET text = ? WHERE id = ?",
        (add_note(page.text, line), page.id),
    )
    return revise(connection, page.id, now, author, source=source), True


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
    note: str | None = None,
) -> Page:
    """Change a page's text, type or aliases as one new revision.

    With `base_revision`, refuses with `changed` when the page moved on since.
    """
    page = get_page(connection, page_id)
    if page.deleted_at is not None:
        raise PageError("deleted", f"the page {page.name!r} is deleted")
    if base_revision is not None and base_revision != page.revision:
        raise PageError(
            "changed", f"the page {page.name!r} changed since revision {base_revision}"
        )
    if kind is not None and not page.is_profile:
        if kind not in PAGE_KINDS:
            raise PageError("invalid_type", f"a page's type is one of {PAGE_KINDS}")
        connection.execute("UPDATE pages SET kind = ? WHERE id = ?", (kind, page_id))
    if text is not None:
        connection.execute("UPDATE pages SET text = ? WHERE id = ?", (text, page_id))
    if aliases is not None:
        for alias in aliases:
            if is_tombstoned(connection, alias, page.user_id) and author != "person":
                raise PageError("tombstoned", f"{alias!r} was deleted forever")
        set_names(connection, page_id, page.name, aliases)
    return revise(connection, page_id, now, author, run=run, note=note)


def rename_page(
    connection: sqlite3.Connection, page_id: int, name: str, now: float
) -> Page:
    """Rename a page; its old name stays as an alias so links keep working."""
    page = get_page(connection, page_id)
    if page.is_profile:
        raise PageError("profile", "the profile cannot be renamed")
    if page.deleted_at is not None:
        raise PageError("deleted", f"the page {page.name!r} is deleted")
    name = check_name(name)
    _check_name_free(connection, name, page_id, page.user_id)
    aliases = [alias for alias in page.aliases if fold_name(alias) != fold_name(name)]
    if fold_name(page.name) != fold_name(name):
        aliases.append(page.name)
    connection.execute("UPDATE pages SET name = ? WHERE id = ?", (name, page_id))
    set_names(connection, page_id, name, aliases)
    return revise(connection, page_id, now, "person", note="renamed")


def delete_page(
    connection: sqlite3.Connection,
    page_id: int,
    now: float,
    *,
    release_names: bool = False,
) -> Page:
    """Move a page to recently deleted.

    Its names stay reserved for a restore, unless `release_names`: then
    another page may take them, and a restore takes back those still free.
    """
    page = get_page(connection, page_id)
    if page.is_profile:
        raise PageError("profile", "the profile cannot be deleted")
    if release_names:
        connection.execute("DELETE FROM page_names WHERE page = ?", (page_id,))
    connection.execute("UPDATE pages SET deleted_at = ? WHERE id = ?", (now, page_id))
    page = get_page(connection, page_id)
    index_page(connection, page)
    return page


def restore_page(
    connection: sqlite3.Connection,
    page_id: int,
    now: float,
    *,
    aliases: list[str] | None = None,
    author: str = "person",
) -> Page:
    """Bring a recently deleted page back.

    A page deleted with its names released takes back its name and `aliases`
    (by default those of its latest revision); raises name_taken when another
    page holds one now.
    """
    page = get_page(connection, page_id)
    if page.deleted_at is None:
        return page
    released = (
        connection.execute(
            "SELECT 1 FROM page_names WHERE page = ?", (page_id,)
        ).fetchone()
        is None
    )
    if released:
        names = latest_aliases(connection, page_id) if aliases is None else aliases
        set_names(connection, page_id, page.name, names)
    connection.execute("UPDATE pages SET deleted_at = NULL WHERE id = ?", (page_id,))
    return revise(connection, page_id, now, author, note="restored")


def delete_forever(
    connection: sqlite3.Connection, page_id: int, confirm: str, now: float
) -> list[str]:
    """Remove a page and its history, unlink it, tombstone its names.

    Its text goes from the nightly runs' records in the same transaction.

    `confirm` must be the page's name. Returns the names of the pages whose
    links to it became plain text.
    """
    page = get_page(connection, page_id)
    if page.is_profile:
        raise PageError("profile", "the profile cannot be deleted")
    if fold_name(confirm) != fold_name(page.name):
        raise PageError(
            "confirmation", f"type the page's name, {page.name!r}, to confirm"
        )
    line_keys = page_line_keys(connection, page)
    names = {fold_name(page.name), *(fold_name(alias) for alias in page.aliases)}
    unlinked = []
    # Another owner's [[same name]] is their own page's link.
    for row in connection.execute(
        "SELECT id, text FROM pages WHERE id != ? AND user_id IS ?",
        (page_id, page.user_id),
    ).fetchall():
        if (new_text := unlink(row[1], names)) != row[1]:
            connection.execute(
                "UPDATE pages SET text = ? WHERE id = ?", (new_text, row[0])
            )
            unlinked.append(revise(connection, row[0], now, "person").name)
    connection.executemany(
        "INSERT OR REPLACE INTO tombstones (folded, name, at) VALUES (?, ?, ?)",
        [
            (name_key(each, page.user_id), each, now)
            for each in (page.name, *page.aliases)
        ],
    )
    connection.execute("DELETE FROM page_search WHERE rowid = ?", (page_id,))
    connection.execute("DELETE FROM pages WHERE id = ?", (page_id,))
    forget_in_runs(connection, page, line_keys)
    return unlinked


def restore_revision(
    connection: sqlite3.Connection, page_id: int, revision: int, now: float
) -> Page:
    """Make an earlier revision's text, type and owner the page's latest revision."""
    row = connection.execute(
        "SELECT kind, text, user_id FROM page_revisions WHERE id = ? AND page = ?",
        (revision, page_id),
    ).fetchone()
    if row is None:
        raise PageError("not_found", f"page {page_id} has no revision {revision}")
    if row[2] != get_page(connection, page_id).user_id:
        move_page(connection, page_id, row[2], now)
    return edit_page(connection, page_id, now, "person", kind=row[0], text=row[1])


def move_page(
    connection: sqlite3.Connection, page_id: int, user_id: str | None, now: float
) -> Page:
    """Make the page `user_id`'s (None: the household's), as a new revision.

    Its names move with it, and must be free among the new owner's pages. A
    profile stays whose it is: each person, and the household, has one.
    """
    page = get_page(connection, page_id)
    if page.is_profile:
        raise PageError("profile", "a profile stays whose it is")
    if page.deleted_at is not None:
        raise PageError("deleted", f"the page {page.name!r} is deleted")
    if page.user_id == user_id:
        return page
    connection.execute("UPDATE pages SET user_id = ? WHERE id = ?", (user_id, page_id))
    set_names(connection, page_id, page.name, list(page.aliases))
    return revise(connection, page_id, now, "person", note="moved")


def forget_fact(
    connection: sqlite3.Connection,
    page_name: str,
    fact: str,
    now: float,
    user_id: str,
) -> tuple[Page, int]:
    """Remove the lines of `user_id`'s own page that say `fact`, as a new revision.

    "Forget that": only a person's own pages, never the household's or
    another's; a line says the fact when its words hold the fact's words,
    whole and in order ("tea" is not in "steam"). A fact of stop words
    alone ("I", "a") says nothing. Returns the page and how many lines went.
    """
    page = page_named(connection, page_name, user_id)
    if page is None or page.deleted_at is not None:
        raise PageError("not_found", f"you have no page {page_name!r}")
    said = words(line_key(fact))
    if not set(said) - ALL_STOP_WORDS:
        raise PageError("invalid_fact", "say which fact to forget")
    lines = page.text.splitlines()
    kept = [
        line
        for line in lines
        if line.lstrip().startswith("#") or not _says(words(line_key(line)), said)
    ]
    if len(kept) == len(lines):
        raise PageError("not_found", f"nothing on {page.name!r} says {fact!r}")
    connection.execute(
        "UPDATE pages SET text = ? WHERE id = ?", ("\n".join(kept) + "\n", page.id)
    )
    page = revise(connection, page.id, now, "person", note="forgotten on request")
    return page, len(lines) - len(kept)


def _says(line: list[str], fact: list[str]) -> bool:
    """Whether a line's words hold the fact's words, whole and in order."""
    return any(
        line[start : start + len(fact)] == fact
        for start in range(len(line) - len(fact) + 1)
    )
