"""Fixtures for tests of long-term memory."""

from collections.abc import Iterator
from pathlib import Path
import sqlite3

import pytest

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.store import in_order
from custom_components.desktop_assistant.store.store import connect


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A migrated assistant.db, as the store's thread holds it."""
    connection = connect(tmp_path / "assistant.db", in_order(SCHEMAS))
    yield connection
    connection.close()
