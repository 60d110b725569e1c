"""Fixtures for tests of long-term memory."""

from collections.abc import Iterator
from pathlib import Path
import sqlite3

import pytest

from custom_components.desktop_assistant.store import MIGRATIONS
from custom_components.desktop_assistant.store.store import connect

from ..integration.conftest import (  # noqa: F401 (fixtures)
    agent,
    check_translations,
    config_entry,
    custom_integrations,
    llama_server,
    tool_files,
)


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A migrated assistant.db, as the store's thread holds it."""
    connection = connect(tmp_path / "assistant.db", MIGRATIONS)
    yield connection
    connection.close()
