"""The integration's SQLite database, `<HA config>/desktop_assistant/assistant.db`.

One connection lives on one worker thread (`Store.async_run` sends it a
function of the connection); the event loop never touches the file. The
database is in WAL mode, and its schema version is SQLite's `user_version`.

How a feature adds its tables: append a `Migration` to `MIGRATIONS` in
`store/migrations.py` with the next version number (the record is version 1),
SQL text or a function of the connection. Migrations run in order at setup,
each in its own transaction with the version bump, so a failed one leaves the
file at the previous version. A file whose version is newer than the last
migration is not touched: the store stays closed and a Repairs issue says so.
Features reach the store through `hass.data[DATA_STORE]` (runtime.py) and treat
`StoreError` (raised by `async_run`) as "not recorded this time": the store
has already logged a warning and raised the Repairs issue for it.
"""

from .faults import (
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreTooNew,
    StoreUnavailable,
    StoreUnwritable,
)
from .migrations import MIGRATIONS, Migration
from .store import DB_FILE, Store, async_setup_store, transaction

__all__ = [
    "DB_FILE",
    "MIGRATIONS",
    "Migration",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreLocked",
    "StoreTooNew",
    "StoreUnavailable",
    "StoreUnwritable",
    "async_setup_store",
    "transaction",
]
