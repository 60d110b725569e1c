"""A page as stored, and reading pages: functions of a database connection.

They run on the store's thread (`Store.async_run`). Nothing here imports
Home Assistant.
"""

from dataclasses import dataclass
import json
import sqlite3
from typing import Any, Final

from ..reader import Reader
from ..text import fold_name
from .errors import PageError
from .text import PROFILE, hint

PROFILE_NAME: Final = "Profile"
# Between a person's user id and a folded name in `page_names`: a page name
# never holds it (names are printable).
OWNER_SEPARATOR: Final = "\x1f"
# Who reads only the household's pages: a turn of no user, the nightly pass.
HOUSEHOLD_READER: Final = Reader(None)
PAGE_KINDS: Final = ("person", "place", "project", "thing", "other")


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
    # Whose it is: a person's user id; None for the household's.
    user_id: str | None = None

    @property
    def is_profile(self) -> bool:
        """Whether this is a profile: the household's, or a person's."""
        return self.kind == PROFILE

    @property
    def names(self) -> set[str]:
        """The folded name and aliases (the profile also answers to `profile`)."""
        names = {fold_name(self.name), *(fold_name(alias) for alias in self.aliases)}
        return names | {PROFILE} if self.is_profile else names

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
            "user_id": self.user_id,
        }


PAGE_COLUMNS: Final = (
    "id, name, kind, text, created_at, updated_at, revision, deleted_at, "
    "(SELECT json_group_array(name) FROM page_names "
    "WHERE page = pages.id AND is_alias ORDER BY name) AS aliases, user_id"
)


def name_key(name: str, owner: str | None) -> str:
    """A name's key in `page_names`: folded, and a person's after their user id."""
    folded = fold_name(name)
    return folded if owner is None else f"{owner}{OWNER_SEPARATOR}{folded}"


def page_of_row(row: sqlite3.Row | tuple[Any, ...]) -> Page:
    """The page of a row of PAGE_COLUMNS."""
    (id_, name, kind, text, created, updated, revision, deleted, aliases, owner) = row
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
        owner,
    )


def get_page(connection: sqlite3.Connection, page_id: int) -> Page:
    """Return a page by id (deleted or not), or raise not_found."""
    row = connection.execute(
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE id = ?", (page_id,)
    ).fetchone()
    if row is None:
        raise PageError("not_found", f"there is no page {page_id}")
    return page_of_row(row)


def page_named(
    connection: sqlite3.Connection, name: str, owner: str | None
) -> Page | None:
    """Return `owner`'s page (None: the household's) named `name` (deleted ones too)."""
    if fold_name(name) == PROFILE:
        return profile_page(connection, owner)
    row = connection.execute(
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE id = "
        "(SELECT page FROM page_names WHERE folded = ?)",
        (name_key(name, owner),),
    ).fetchone()
    return None if row is None else page_of_row(row)


def find_page(
    connection: sqlite3.Connection, name: str, user_id: str | None = None
) -> Page | None:
    """Return the page named `name` that `user_id` reads: their own, else the household's."""
    if user_id is not None and (own := page_named(connection, name, user_id)):
        return own
    return page_named(connection, name, None)


def profile_page(
    connection: sqlite3.Connection, user_id: str | None = None
) -> Page | None:
    """Return the household's profile, or a person's, if it was ever written."""
    row = connection.execute(
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE kind = ? AND user_id IS ?",
        (PROFILE, user_id),
    ).fetchone()
    return None if row is None else page_of_row(row)


def list_pages(
    connection: sqlite3.Connection, reader: Reader = HOUSEHOLD_READER
) -> tuple[list[Page], list[Page]]:
    """Return the live pages `reader` may read (profiles first, then by name), and the deleted ones."""
    readable, params = reader.condition("user_id")
    rows = [
        page_of_row(row)
        for row in connection.execute(
            f"SELECT {PAGE_COLUMNS} FROM pages WHERE {readable}"
            " ORDER BY kind != ?, user_id IS NOT NULL, name COLLATE NOCASE",
            (*params, PROFILE),
        )
    ]
    return (
        [page for page in rows if page.deleted_at is None],
        [page for page in rows if page.deleted_at is not None],
    )


def tombstones(connection: sqlite3.Connection) -> frozenset[str]:
    """The folded names deleted forever."""
    return frozenset(
        row[0] for row in connection.execute("SELECT folded FROM tombstones")
    )


def is_tombstoned(connection: sqlite3.Connection, name: str, owner: str | None) -> bool:
    """Whether `owner`'s page named `name` (None: the household's) was deleted forever.

    Tombstones are keyed as names are (`name_key`): each owner's own.
    """
    return (
        connection.execute(
            "SELECT 1 FROM tombstones WHERE folded = ?", (name_key(name, owner),)
        ).fetchone()
        is not None
    )


def page_names(connection: sqlite3.Connection, limit: int) -> list[str]:
    """The names of the household's live pages but its profile, recently updated first."""
    return [
        row[0]
        for row in connection.execute(
            "SELECT name FROM pages WHERE deleted_at IS NULL AND kind != ? "
            "AND user_id IS NULL ORDER BY updated_at DESC LIMIT ?",
            (PROFILE, limit),
        )
    ]
