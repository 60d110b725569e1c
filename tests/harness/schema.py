"""Databases of an earlier schema, for the tests of a migration."""

import sqlite3

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.store import in_order
from custom_components.desktop_assistant.store.store import migrate

MIGRATIONS = in_order(SCHEMAS)


def database_before(version: int, rows: str) -> sqlite3.Connection:
    """An in-memory database migrated up to before `version`, holding `rows` (SQL)."""
    connection = sqlite3.connect(":memory:", isolation_level=None)
    migrate(connection, [m for m in MIGRATIONS if m.version < version])
    connection.executescript(rows)
    return connection


def migrate_to_latest(connection: sqlite3.Connection) -> None:
    """Run every migration the database lacks."""
    migrate(connection, MIGRATIONS)
