"""Reading and trimming a feature's rows, newest first, by a key column.

The store knows no feature's tables: each caller hands in its table and
columns. They are SQL identifiers, put into the text of the query, so they
must be the caller's constants, never input; a name that is not a plain
identifier is refused.
"""

from collections.abc import Mapping
import re
import sqlite3
from typing import Any

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


def _identifier(name: str) -> str:
    """The name, checked to be a plain lower-case SQL identifier."""
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"not an SQL identifier: {name!r}")
    return name


def newest_rows(
    connection: sqlite3.Connection,
    table: str,
    fields: Mapping[str, str],
    *,
    key: str,
    value: Any,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The rows whose `key` column is `value`, newest (highest id) first.

    `fields` maps each field of the returned dicts to its column.
    """
    columns = ", ".join(_identifier(column) for column in fields.values())
    query = (
        f"SELECT {columns} FROM {_identifier(table)} "
        f"WHERE {_identifier(key)} = ? ORDER BY id DESC"
    )
    parameters: tuple[Any, ...] = (value,)
    if limit is not None:
        query += " LIMIT ?"
        parameters += (limit,)
    return [
        dict(zip(fields, row, strict=True))
        for row in connection.execute(query, parameters)
    ]


def keep_newest(
    connection: sqlite3.Connection, table: str, *, key: str, value: Any, keep: int
) -> None:
    """Delete the rows whose `key` column is `value` but the newest `keep`."""
    table, key = _identifier(table), _identifier(key)
    connection.execute(
        f"DELETE FROM {table} WHERE {key} = ? AND id NOT IN "
        f"(SELECT id FROM {table} WHERE {key} = ? ORDER BY id DESC LIMIT ?)",
        (value, value, keep),
    )
