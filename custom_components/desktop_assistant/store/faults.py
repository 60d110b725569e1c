"""What can go wrong with the database file, as the store reports it."""

import sqlite3
from typing import ClassVar

# SQLite's primary result codes (the low byte of an extended code).
SQLITE_PERM = 3
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26


class StoreError(Exception):
    """The database could not do what was asked; `kind` names the Repairs issue."""

    kind: ClassVar[str] = "failed"


class StoreLocked(StoreError):
    """Another program holds the database's write lock."""

    kind = "locked"


class StoreCorrupt(StoreError):
    """The file is not a database, or its contents are damaged."""

    kind = "corrupt"


class StoreUnwritable(StoreError):
    """The file or its folder cannot be created or written (permissions, disk)."""

    kind = "unwritable"


class StoreTooNew(StoreError):
    """The file was written by a newer version of the integration."""

    kind = "too_new"


class StoreUnavailable(StoreError):
    """The store did not open; what stopped it is already reported."""

    kind = "unavailable"


def classify(err: sqlite3.Error | OSError) -> StoreError:
    """Return the store's error for an error of sqlite3 or the file system."""
    if isinstance(err, OSError):
        return StoreUnwritable(str(err))
    code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF
    message = str(err)
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return StoreLocked(message)
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return StoreCorrupt(message)
    if code in (
        SQLITE_PERM,
        SQLITE_READONLY,
        SQLITE_IOERR,
        SQLITE_FULL,
        SQLITE_CANTOPEN,
    ):
        return StoreUnwritable(message)
    return StoreError(message)
