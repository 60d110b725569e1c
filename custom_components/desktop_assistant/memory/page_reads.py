"""A page as stored, and reading pages: functions of a database connection.

They run on the store's thread (`Store.async_run`). Nothing here imports
Home Assistant.
"""

from dataclasses import dataclass
import json
import sqlite3
from typing import Any, Final

from ..text import fold_name
from .errors import PageError
from .text import PROFILE, hint

PROFILE_NAME: Final = "Profile"
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

    @property
    def is_profile(self) -> bool:
        """Whether this is the household's profile."""
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
        }


PAGE_COLUMNS: Final = (
    "id, name, kind, text, created_at, updated_at, revision, deleted_at, "
    "(SELECT json_group_array(name) FROM page_names "
    "WHERE page = pages.id AND is_alias ORDER BY name) AS aliases"
)


def page_of_row(row: sqlite3.Row | tuple[Any, ...]) -> Page:
    """The page of a row of PAGE_COLUMNS."""
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
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE id = ?", (page_id,)
    ).fetchone()
    if row is None:
        raise PageError("not_found", f"there is no page {page_id}")
    return page_of_row(row)


def find_page(connection: sqlite3.Connection, name: str) -> Page | None:
    """Return the page with `name` as its name or alias (deleted ones too)."""
    if fold_name(name) == PROFILE:
        return profile_page(connection)
    row = connection.execute(
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE id = "
        "(SELECT page FROM page_names WHERE folded = ?)",
        (fold_name(name),),
    ).fetchone()
    return None if row is None else page_of_row(row)


def profile_page(connection: sqlite3.Connection) -> Page | None:
    """Return the profile, if it was ever written."""
    row = connection.execute(
        f"SELECT {PAGE_COLUMNS} FROM pages WHERE kind = ?", (PROFILE,)
    ).fetchone()
    return None if row is None else page_of_row(row)


def list_pages(connection: sqlite3.Connection) -> tuple[list[Page], list[Page]]:
    """Return the live pages (profile first, then by name) and the deleted ones."""
    rows = [
        page_of_row(row)
        for row in connection.execute(
            f"SELECT {PAGE_COLUMNS} FROM pages ORDER BY kind != ?, name COLLATE NOCASE",
            (PROFILE,),
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


def is_tombstoned(connection: sqlite3.Connection, name: str) -> bool:
    """Whether `name` was deleted forever."""
    return (
        connection.execute(
            "SELECT 1 FROM tombstones WHERE folded = ?", (fold_name(name),)
        ).fetchone()
        is not None
    )


def page_names(connection: sqlite3.Connection, limit: int) -> list[str]:
    """The names of the live pages other than the profile, recently updated first."""
    return [
        row[0]
        for row in connection.execute(
            "SELECT name FROM pages WHERE deleted_at IS NULL AND kind != ? "
            "ORDER BY updated_at DESC LIMIT ?",
            (PROFILE, limit),
        )
    ]
