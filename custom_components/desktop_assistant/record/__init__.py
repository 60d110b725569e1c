"""The conversation record: every question an agent answers, kept as text.

`async_setup_record` opens it for the integration, with its websocket
commands and its delete_conversations action; an agent calls
`async_begin_turn` when a question arrives and `TurnRecording.async_end`
when it has answered. Other features read it through `Record.async_read`
with the functions of `record.database`, and hear of conversations going
quiet through `async_listen_quiet`.
"""

from homeassistant.core import HomeAssistant

from ..runtime import DATA_RECORD
from ..store import Store
from .conversation_record import InProgress, Record, TurnRecording, async_listen_quiet
from .recall import RECALL_TOOL, RecallConversationsTool
from .retention import async_setup_retention
from .schema import SCHEMA
from .services import async_register_services
from .websocket import async_register_commands

__all__ = [
    "RECALL_TOOL",
    "SCHEMA",
    "InProgress",
    "RecallConversationsTool",
    "Record",
    "TurnRecording",
    "async_listen_quiet",
    "async_setup_record",
]


def async_setup_record(hass: HomeAssistant, store: Store) -> Record:
    """Start the record on the store: websocket commands, action, quiet, retention."""
    record = Record(hass, store)
    hass.data[DATA_RECORD] = record
    async_register_commands(hass)
    async_register_services(hass)
    async_setup_retention(hass, record)
    if store.available:
        record.async_start()
    return record
