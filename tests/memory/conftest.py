"""Fixtures for tests of long-term memory."""

from collections.abc import Iterator
from pathlib import Path
import sqlite3
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
import pytest

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from custom_components.desktop_assistant.store import in_order
from custom_components.desktop_assistant.store.store import connect
from tests.harness.llama_server import MODEL_ID


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A migrated assistant.db, as the store's thread holds it."""
    connection = connect(tmp_path / "assistant.db", in_order(SCHEMAS))
    yield connection
    connection.close()


@pytest.fixture
def agent_options() -> dict[str, Any]:
    """An agent with the integration's own tools API (tool files and memory)."""
    return DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]}
