"""Another program holding the integration's database, as a tool or browser would."""

import sqlite3

from homeassistant.core import HomeAssistant

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.store import DB_FILE


def lock_the_database(hass: HomeAssistant) -> sqlite3.Connection:
    """Hold the database's write lock from another connection."""
    other = sqlite3.connect(hass.config.path(DOMAIN, DB_FILE), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def release(other: sqlite3.Connection) -> None:
    """Give the lock back."""
    other.execute("ROLLBACK")
    other.close()
