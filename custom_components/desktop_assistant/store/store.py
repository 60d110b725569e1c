"""The database connection on its own worker thread, migrated at setup."""

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
import contextlib
from datetime import datetime
import logging
from pathlib import Path
import sqlite3
from typing import Final

from homeassistant.const import EVENT_HOMEASSISTANT_CLOSE
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.event import async_call_later

from ..const import CONFIG_FOLDER, DOMAIN
from ..runtime import DATA_STORE
from .faults import (
    StoreError,
    StoreLocked,
    StoreTooNew,
    StoreUnavailable,
    StoreUnwritable,
    classify,
)
from .migrations import Migration, apply_migration, in_order, schema_version

_LOGGER = logging.getLogger(__name__)

DB_FILE: Final = "assistant.db"
# How long a statement waits for another program's write lock; it waits on
# the worker thread, never on the event loop.
BUSY_TIMEOUT: Final = 2.0
# How often a file that could not open at start is tried again, while its
# fault can pass (another program's lock, permissions being fixed).
REOPEN_DELAY: Final = 60.0
ISSUE_PREFIX: Final = "database_"
# Faults that can go away by themselves: their issue is cleared by the next
# statement that succeeds.
TRANSIENT: Final = (StoreLocked, StoreUnwritable, StoreError)


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Run the block in one write transaction: all of it is kept, or none."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        # SQLite ends the transaction itself on some errors (a full disk, an
        # I/O error); a ROLLBACK then would hide that error behind its own.
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def refuse_newer(
    connection: sqlite3.Connection, migrations: Sequence[Migration]
) -> int:
    """Return the file's version; raise StoreTooNew when the code is older."""
    version = schema_version(connection)
    latest = migrations[-1].version if migrations else 0
    if version > latest:
        raise StoreTooNew(
            f"the database is at schema version {version}, this version of the"
            f" integration knows versions up to {latest}"
        )
    return version


def migrate(connection: sqlite3.Connection, migrations: Sequence[Migration]) -> int:
    """Apply the migrations the file lacks, in order; return the version.

    Raises StoreTooNew, without writing, when the file is newer than the code.
    """
    version = refuse_newer(connection, migrations)
    for migration in migrations:
        if migration.version <= version:
            continue
        with transaction(connection):
            apply_migration(connection, migration)
        version = migration.version
    return version


def connect(path: Path, migrations: Sequence[Migration]) -> sqlite3.Connection:
    """Open (creating when needed) and migrate the database file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Transactions are explicit (BEGIN ... COMMIT), never implicit.
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        # Before anything writes: switching to WAL alone changes the header.
        refuse_newer(connection, migrations)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        migrate(connection, migrations)
    except BaseException:
        connection.close()
        raise
    return connection


class Store:
    """The database file; every statement runs on the store's own thread."""

    def __init__(
        self,
        hass: HomeAssistant,
        path: Path,
        migrations: Sequence[Migration],
    ) -> None:
        """Prepare the store; `async_open` opens the file."""
        self.hass = hass
        self.path = path
        self.migrations = migrations
        self._executor: ThreadPoolExecutor | None = None
        self._connection: sqlite3.Connection | None = None
        self._issues: set[str] = set()
        self._fault: Exception | None = None
        self._cancel_reopen: CALLBACK_TYPE | None = None

    @property
    def available(self) -> bool:
        """Whether the file is open and migrated."""
        return self._connection is not None

    async def async_open(self) -> bool:
        """Open and migrate the file; on a fault, report it and stay closed."""
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"{DOMAIN}_store"
        )
        try:
            self._connection = await self._async_submit(
                lambda: connect(self.path, self.migrations)
            )
        except StoreError as err:
            self._fault = err
            self._report(err)
            await self._async_stop_thread()
            return False
        except Exception as err:  # a bug in a migration must not stop setup
            _LOGGER.exception("%s: a migration failed", self.path)
            self._fault = err
            self._report(StoreError(f"a migration failed: {err!r}"))
            await self._async_stop_thread()
            return False
        self._fault = None
        self._clear_issues()
        return True

    @callback
    def async_reopen_later(self, opened: Callable[[], Awaitable[None]]) -> None:
        """Try a file that did not open again while its fault can pass; then `opened()`.

        A damaged or newer file, or a failed migration, waits for a person.
        """
        if not isinstance(self._fault, (StoreLocked, StoreUnwritable)):
            return

        async def reopen(now: datetime) -> None:
            self._cancel_reopen = None
            if await self.async_open():
                _LOGGER.info("%s: opened", self.path)
                await opened()
            else:
                self.async_reopen_later(opened)

        self._cancel_reopen = async_call_later(self.hass, REOPEN_DELAY, reopen)

    async def async_run[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work(connection)` on the store's thread and return its result.

        sqlite3 and file-system errors come back as StoreError, already
        logged and reported as a Repairs issue.
        """
        if (connection := self._connection) is None:
            raise StoreUnavailable(f"{self.path.name} is not open")
        try:
            result = await self._async_submit(lambda: work(connection))
        except StoreError as err:
            self._report(err)
            raise
        if self._issues:
            self._clear_issues(transient_only=True)
        return result

    async def async_close(self) -> None:
        """Close the file and end the store's thread."""
        if self._cancel_reopen is not None:
            self._cancel_reopen()
            self._cancel_reopen = None
        if (connection := self._connection) is not None:
            self._connection = None
            with contextlib.suppress(StoreError):
                await self._async_submit(connection.close)
        await self._async_stop_thread()

    async def _async_submit[T](self, work: Callable[[], T]) -> T:
        assert self._executor is not None

        def guarded() -> T:
            try:
                return work()
            except (sqlite3.Error, OSError) as err:
                raise classify(err) from err

        return await asyncio.wrap_future(self._executor.submit(guarded))

    async def _async_stop_thread(self) -> None:
        if (executor := self._executor) is not None:
            self._executor = None
            # Nothing is queued any more: the thread ends at once.
            executor.shutdown(wait=True)

    @callback
    def _report(self, err: StoreError) -> None:
        issue_id = ISSUE_PREFIX + err.kind
        # Once per fault until it clears, not once per statement.
        log = _LOGGER.debug if issue_id in self._issues else _LOGGER.warning
        log("%s: %s (%s)", self.path, _DESCRIPTIONS[err.kind], err)
        self._issues.add(issue_id)
        ir.async_create_issue(
            self.hass,
            DOMAIN,
            issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key=issue_id,
            translation_placeholders={"path": str(self.path), "error": str(err)},
        )

    @callback
    def _clear_issues(self, transient_only: bool = False) -> None:
        """Delete the issues of faults that are over.

        After an open, every database issue is over, also those raised
        before a restart.
        """
        if transient_only:
            over = self._issues & {ISSUE_PREFIX + fault.kind for fault in TRANSIENT}
        else:
            over = {
                issue_id
                for domain, issue_id in ir.async_get(self.hass).issues
                if domain == DOMAIN and issue_id.startswith(ISSUE_PREFIX)
            }
        for issue_id in over:
            ir.async_delete_issue(self.hass, DOMAIN, issue_id)
        self._issues -= over


# For the log; the Repairs issues have their translated text.
_DESCRIPTIONS: Final = {
    "failed": "the database reported an error",
    "locked": "the database is locked by another program",
    "corrupt": "the database file is damaged or not a database",
    "unwritable": "the database file cannot be written",
    "too_new": "the database is newer than this version of the integration; it is left untouched",
}


async def async_setup_store(
    hass: HomeAssistant, schemas: Iterable[Sequence[Migration]]
) -> Store:
    """Open `<config>/desktop_assistant/assistant.db` with the features' schemas.

    The store is shared through `hass.data[DATA_STORE]` even when it could not
    open, so features can ask `available` rather than whether it exists.
    """
    store = Store(
        hass, Path(hass.config.path(CONFIG_FOLDER, DB_FILE)), in_order(schemas)
    )
    hass.data[DATA_STORE] = store
    await store.async_open()

    async def close(event: Event) -> None:
        await store.async_close()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_CLOSE, close)
    return store
