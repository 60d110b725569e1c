"""The integration's SQLite database, `<HA config>/desktop_assistant/assistant.db`.

One connection lives on one worker thread (`Store.async_run` sends it a
function of the connection); the event loop never touches the file. The
database is in WAL mode, and its schema version is SQLite's `user_version`.

How a feature adds its tables: its own `schema.py` holds a list of
`Migration`s (SQL text or a function of the connection), numbered in one
sequence over all features (the record is 1, memory 2 and 3), and the
integration's setup hands every feature's list to `async_setup_store`; the
store knows no feature's tables. Migrations run in order at setup,
each in its own transaction with the version bump, so a failed one leaves the
file at the previous version. A file whose version is newer than the last
migration is not touched: the store stays closed and a Repairs issue says so.
A file that is locked by another program or cannot be written at start is
tried again every minute (`Store.async_reopen_later`); once it opens, the
features that need it start.
Features reach the store through `hass.data[DATA_STORE]` (runtime.py) and treat
`StoreError` (raised by `async_run`) as "not recorded this time": the store
has already logged a warning and raised the Repairs issue for it. An action
refused by it raises `unavailable_error(...)`, its translated error.
"""

from .actions import unavailable_error
from .faults import (
    StoreCorrupt,
    StoreError,
    StoreLocked,
    StoreTooNew,
    StoreUnavailable,
    StoreUnwritable,
)
from .migrations import Migration, in_order
from .store import DB_FILE, Store, async_setup_store, transaction

__all__ = [
    "DB_FILE",
    "Migration",
    "Store",
    "StoreCorrupt",
    "StoreError",
    "StoreLocked",
    "StoreTooNew",
    "StoreUnavailable",
    "StoreUnwritable",
    "async_setup_store",
    "in_order",
    "transaction",
    "unavailable_error",
]
