"""The store's newest-rows helpers: any feature's table, identifiers checked."""

import sqlite3

import pytest

from custom_components.desktop_assistant.store.rows import keep_newest, newest_rows


@pytest.fixture
def connection() -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:")
    connection.execute(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, owner TEXT, label TEXT)"
    )
    connection.executemany(
        "INSERT INTO runs (owner, label) VALUES (?, ?)",
        [("a", f"a{n}") for n in range(5)] + [("b", "b0")],
    )
    return connection


def test_newest_rows_come_first_named_by_field(connection: sqlite3.Connection) -> None:
    rows = newest_rows(
        connection, "runs", {"name": "label"}, key="owner", value="a", limit=2
    )
    assert rows == [{"name": "a4"}, {"name": "a3"}]
    assert (
        len(newest_rows(connection, "runs", {"n": "id"}, key="owner", value="a")) == 5
    )


def test_keep_newest_trims_only_that_key(connection: sqlite3.Connection) -> None:
    keep_newest(connection, "runs", key="owner", value="a", keep=2)
    labels = [row[0] for row in connection.execute("SELECT label FROM runs")]
    assert labels == ["a3", "a4", "b0"]


@pytest.mark.parametrize(
    "name", ["runs; DROP TABLE runs", "Runs", "owner = 1 OR 1", ""]
)
def test_a_name_that_is_no_identifier_is_refused(
    connection: sqlite3.Connection, name: str
) -> None:
    with pytest.raises(ValueError, match="not an SQL identifier"):
        newest_rows(connection, name, {"n": "id"}, key="owner", value="a")
    with pytest.raises(ValueError, match="not an SQL identifier"):
        keep_newest(connection, "runs", key=name, value="a", keep=1)
    assert connection.execute("SELECT count(*) FROM runs").fetchone() == (6,)
