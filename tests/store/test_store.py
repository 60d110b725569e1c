"""The database file: created and migrated at setup, faults reported, never fatal."""

import contextlib
from pathlib import Path
import sqlite3
import threading
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.runtime import DATA_MEMORY, DATA_STORE
from custom_components.desktop_assistant.store import (
    DB_FILE,
    Migration,
    Store,
    StoreLocked,
    in_order,
)
from custom_components.desktop_assistant.store.store import REOPEN_DELAY, transaction

MIGRATIONS = in_order(SCHEMAS)
LATEST = MIGRATIONS[-1].version


def db_path(hass: HomeAssistant) -> Path:
    return Path(hass.config.path(DOMAIN, DB_FILE))


def issue_ids(hass: HomeAssistant) -> set[str]:
    return {
        issue_id
        for domain, issue_id in ir.async_get(hass).issues
        if domain == DOMAIN and issue_id.startswith("database_")
    }


def read(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as connection:
        return connection.execute(sql).fetchall()


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))


async def test_setup_creates_and_migrates_an_empty_database(
    hass: HomeAssistant,
) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    store = hass.data[DATA_STORE]
    assert store.available
    path = db_path(hass)
    assert await hass.async_add_executor_job(read, path, "PRAGMA user_version") == [
        (LATEST,)
    ]
    assert await hass.async_add_executor_job(read, path, "PRAGMA journal_mode") == [
        ("wal",)
    ]
    tables = {
        name
        for (name,) in await hass.async_add_executor_job(
            read, path, "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    assert {"conversations", "entries", "conversation_search"} <= tables
    # The store's work runs on its own thread, not the event loop's.
    thread = await store.async_run(lambda _: threading.current_thread().name)
    assert thread.startswith(f"{DOMAIN}_store")
    assert issue_ids(hass) == set()


async def test_a_newer_database_is_refused_and_left_untouched(
    hass: HomeAssistant,
) -> None:
    path = db_path(hass)

    def newer() -> bytes:
        path.parent.mkdir(parents=True)
        with sqlite3.connect(path) as connection:
            connection.execute("CREATE TABLE future (x)")
            connection.execute(f"PRAGMA user_version = {LATEST + 1}")
        connection.close()
        return path.read_bytes()

    before = await hass.async_add_executor_job(newer)
    assert await async_setup_component(hass, DOMAIN, {})
    assert not hass.data[DATA_STORE].available
    assert issue_ids(hass) == {"database_too_new"}
    issue = ir.async_get(hass).async_get_issue(DOMAIN, "database_too_new")
    assert issue.translation_placeholders["path"] == str(path)
    assert f"version {LATEST + 1}" in issue.translation_placeholders["error"]
    assert await hass.async_add_executor_job(path.read_bytes) == before
    assert not path.with_name(DB_FILE + "-wal").exists()


async def test_a_corrupt_database_is_reported(
    hass: HomeAssistant, caplog: pytest.LogCaptureFixture
) -> None:
    path = db_path(hass)

    def garbage() -> None:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"this is not a database, just some text " * 200)

    await hass.async_add_executor_job(garbage)
    assert await async_setup_component(hass, DOMAIN, {})
    assert not hass.data[DATA_STORE].available
    assert issue_ids(hass) == {"database_corrupt"}
    assert "damaged or not a database" in caplog.text


async def test_a_failed_migration_leaves_the_previous_version(
    hass: HomeAssistant, tmp_path: Path
) -> None:
    path = tmp_path / DB_FILE

    def broken(connection: sqlite3.Connection) -> None:
        connection.execute("CREATE TABLE half (x)")
        connection.execute("INSERT INTO missing VALUES (1)")

    def buggy(connection: sqlite3.Connection) -> None:
        connection.execute("CREATE TABLE half (x)")
        raise ValueError("a bug in a migration")

    migrations = (
        Migration(1, "first", "CREATE TABLE first (x);"),
        Migration(2, "broken", broken),
    )
    store = Store(hass, path, migrations)
    assert not await store.async_open()
    assert issue_ids(hass) == {"database_failed"}
    store = Store(hass, path, (*migrations[:1], Migration(2, "buggy", buggy)))
    assert not await store.async_open()
    assert (
        "a bug in a migration"
        in (
            ir.async_get(hass)
            .async_get_issue(DOMAIN, "database_failed")
            .translation_placeholders["error"]
        )
    )
    tables = await hass.async_add_executor_job(
        read, path, "SELECT name FROM sqlite_master"
    )
    assert tables == [("first",)]
    assert await hass.async_add_executor_job(read, path, "PRAGMA user_version") == [
        (1,)
    ]

    # A later version of the code with a working migration 2 moves it on.
    fixed = (*migrations[:1], Migration(2, "fixed", "CREATE TABLE second (x);"))
    store = Store(hass, path, fixed)
    assert await store.async_open()
    assert issue_ids(hass) == set()
    await store.async_close()
    assert await hass.async_add_executor_job(read, path, "PRAGMA user_version") == [
        (2,)
    ]


async def test_a_locked_database_is_reported_and_clears(
    hass: HomeAssistant, tmp_path: Path
) -> None:
    store = Store(hass, tmp_path / DB_FILE, (Migration(1, "t", "CREATE TABLE t (x);"),))
    assert await store.async_open()
    other = sqlite3.connect(tmp_path / DB_FILE, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")

    def write(connection: sqlite3.Connection) -> None:
        with transaction(connection):
            connection.execute("INSERT INTO t VALUES (1)")

    with pytest.raises(StoreLocked):
        await store.async_run(write)
    assert issue_ids(hass) == {"database_locked"}

    other.execute("ROLLBACK")
    other.close()
    await store.async_run(write)
    assert issue_ids(hass) == set()
    assert await store.async_run(lambda c: c.execute("SELECT x FROM t").fetchall()) == [
        (1,)
    ]
    await store.async_close()


async def test_an_unwritable_database_is_reported(hass: HomeAssistant) -> None:
    # A folder where the file should be: SQLite cannot open it.
    await hass.async_add_executor_job(lambda: db_path(hass).mkdir(parents=True))
    assert await async_setup_component(hass, DOMAIN, {})
    assert not hass.data[DATA_STORE].available
    assert issue_ids(hass) == {"database_unwritable"}


@pytest.mark.freeze_time("2026-11-20 20:00:00+00:00")  # noon in the tests' zone
async def test_a_database_locked_at_start_opens_once_the_lock_is_gone(
    hass: HomeAssistant, freezer: Any
) -> None:
    path = db_path(hass)
    path.parent.mkdir(parents=True, exist_ok=True)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # a database browser holding the file
    assert await async_setup_component(hass, DOMAIN, {})
    store = hass.data[DATA_STORE]
    assert not store.available
    assert DATA_MEMORY not in hass.data
    assert issue_ids(hass) == {"database_locked"}

    # Still held at the first try: it stays closed and tries again.
    freezer.tick(REOPEN_DELAY + 1)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert not store.available

    other.execute("ROLLBACK")
    other.close()
    freezer.tick(REOPEN_DELAY + 1)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert store.available
    assert issue_ids(hass) == set()
    memory = hass.data[DATA_MEMORY]
    assert (await memory.async_remember("Anouk", "Plays the cello")).startswith(
        "Noted on Anouk"
    )
    assert await hass.async_add_executor_job(read, path, "PRAGMA user_version") == [
        (LATEST,)
    ]


def make_version_2_database(path: Path) -> None:
    """A database as the code before the features' own schemas made it."""
    sql = (Path(__file__).parent / "fixtures" / "schema_v2.sql").read_text()
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.executescript(sql)
        connection.executescript(
            "INSERT INTO conversations (conversation_id, agent_id, channel,"
            " started_at, last_activity_at, activity, status) VALUES"
            " ('conv-old', 'conversation.x', 'text', 1.0, 2.0, 1, 'quiet');"
            "INSERT INTO conversations (conversation_id, agent_id, channel,"
            " started_at, last_activity_at, activity, status) VALUES"
            " ('conv-unread', 'conversation.x', 'text', 4.0, 5.0, 2, 'quiet');"
            "INSERT INTO entries (conversation, at, kind, text) VALUES"
            " (1, 1.0, 'user', 'Anouk lives in Leiden.');"
            "INSERT INTO pages (name, kind, text, created_at, updated_at) VALUES"
            " ('Anouk', 'person', 'Sara''s sister.', 1.0, 1.0);"
            "INSERT INTO page_names VALUES ('anouk', 1, 'Anouk', 0);"
            "INSERT INTO extracted_conversations VALUES ('conv-old', 1, 3.0);"
            "PRAGMA user_version = 2;"
        )


async def test_a_database_of_the_previous_schema_opens_unchanged(
    hass: HomeAssistant,
) -> None:
    path = db_path(hass)
    path.parent.mkdir(parents=True, exist_ok=True)
    await hass.async_add_executor_job(make_version_2_database, path)
    schema_before = await hass.async_add_executor_job(
        read, path, "SELECT name, sql FROM sqlite_master ORDER BY name"
    )
    assert await async_setup_component(hass, DOMAIN, {})
    assert hass.data[DATA_STORE].available
    assert issue_ids(hass) == set()
    # Versions 1 and 2 are not run again; 3 to 13 are added: memory's
    # extraction queue, the server and model of each reply, tool and job
    # runs, chat threads, nightly runs handed to the jobs, outcomes as a kind
    # and a detail, nightly runs under the jobs' ids, whose each
    # conversation, chat thread and page is.
    assert await hass.async_add_executor_job(read, path, "PRAGMA user_version") == [
        (LATEST,)
    ]
    schema_after = await hass.async_add_executor_job(
        read, path, "SELECT name, sql FROM sqlite_master ORDER BY name"
    )
    changed = {name for name, sql in set(schema_after) - set(schema_before)}
    assert changed == {
        "conversations",
        "conversations_by_user",
        "pages",
        "page_revisions",
        "pages_by_user",
        "extracted_conversations",
        "extraction_queue",
        "sqlite_autoindex_extraction_queue_1",
        "entries",
        "tool_runs",
        "tool_runs_by_tool",
        "job_runs",
        "job_runs_by_job",
        "chat_threads",
        "chat_threads_by_user",
        "sqlite_autoindex_chat_threads_1",
        "nightly_runs",
        "nightly_run_moved",
        "job_first_seen",
        "sqlite_autoindex_job_first_seen_1",
    }
    assert await hass.async_add_executor_job(
        read, path, "SELECT conversation_id, last_entry FROM extracted_conversations"
    ) == [("conv-old", 1)]
    assert await hass.async_add_executor_job(
        read, path, "SELECT text FROM entries"
    ) == [("Anouk lives in Leiden.",)]
    # The quiet conversation extraction had not read yet waits for the pass.
    await hass.async_block_till_done(wait_background_tasks=True)
    assert await hass.async_add_executor_job(
        read, path, "SELECT conversation_id FROM extraction_queue"
    ) == [("conv-unread",)]
    memory = hass.data[DATA_MEMORY]
    assert "Sara's sister" in await memory.async_recall("Anouk")


def test_a_transaction_sqlite_ended_itself_raises_its_own_error(
    tmp_path: Path,
) -> None:
    connection = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    connection.execute("CREATE TABLE t (x)")
    # As on a full disk: SQLite rolls back by itself, then the error comes.
    full = pytest.raises(sqlite3.OperationalError, match="database or disk is full")
    with full, transaction(connection):
        connection.execute("INSERT INTO t VALUES (1)")
        connection.execute("ROLLBACK")
        raise sqlite3.OperationalError("database or disk is full")
    assert connection.execute("SELECT count(*) FROM t").fetchone() == (0,)
    connection.close()
