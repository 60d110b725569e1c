"""The migration runner: each feature hands in its schema as a list of migrations.

`user_version` is the number of the last migration applied. Versions are
one sequence over all features (each feature's `schema.py` lists its own),
so a database keeps the numbers it was written with. A released migration is
never edited; a change to a schema is a new migration with the next number.
"""

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
import logging
import sqlite3

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Migration:
    """One step of a schema: SQL statements, or a function of the connection.

    A function runs inside the migration's transaction: it must not commit,
    nor call `executescript` (which would).
    """

    version: int
    description: str
    apply: str | Callable[[sqlite3.Connection], None]


def in_order(schemas: Iterable[Sequence[Migration]]) -> tuple[Migration, ...]:
    """The features' migrations as one sequence; raise when numbers clash or skip."""
    ordered = tuple(
        sorted(
            (migration for schema in schemas for migration in schema),
            key=lambda migration: migration.version,
        )
    )
    versions = [migration.version for migration in ordered]
    if versions != list(range(1, len(ordered) + 1)):
        raise ValueError(f"migration versions must be 1, 2, 3, ...: {versions}")
    return ordered


def schema_version(connection: sqlite3.Connection) -> int:
    """The number of the last migration applied to the file."""
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def split_statements(sql: str) -> Iterator[str]:
    """The complete statements of an SQL script, triggers kept whole."""
    statement = ""
    for line in sql.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            if statement.strip():
                yield statement
            statement = ""
    if statement.strip():
        yield statement


def apply_migration(connection: sqlite3.Connection, migration: Migration) -> None:
    """Run one migration's statements (the caller holds the transaction)."""
    _LOGGER.debug("Migrating to version %s", migration.version)
    if isinstance(migration.apply, str):
        for statement in split_statements(migration.apply):
            connection.execute(statement)
    else:
        migration.apply(connection)
    # PRAGMA takes no parameters; the version is an int.
    connection.execute(f"PRAGMA user_version = {int(migration.version)}")
