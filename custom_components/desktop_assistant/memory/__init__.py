"""Long-term memory: pages, the tools that write and read them, the nightly pass.

`async_setup_memory` opens it on the store (its tables are `SCHEMA`), queues
the conversations the record says went quiet, registers the nightly pass
(`nightly/`) as a job (the jobs registry times and records it), and offers
it as the `run_nightly` action (administrators, automations and scripts),
which answers `memory_unavailable` while memory is off.
"""

import logging

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback

from ..const import DOMAIN
from ..jobs import async_register_job
from ..record import async_listen_quiet
from ..runtime import DATA_MEMORY, DATA_NIGHTLY_JOB, DATA_RECORD, DATA_STORE
from ..store import StoreError
from .errors import ERROR_CODES
from .memory import Memory
from .nightly import extraction, runs
from .nightly.job import NightlyJob, async_register_run_nightly, async_time_nightly
from .nightly.nightly_pass import NightlyPass
from .nightly.queue import async_queue_unread
from .owners import websocket_move_page
from .pages import PAGE_KINDS
from .profile import websocket_create_profile
from .schema import SCHEMA
from .websocket import async_register_commands

__all__ = [
    "ERROR_CODES",
    "PAGE_KINDS",
    "SCHEMA",
    "Memory",
    "async_setup_memory",
    "async_time_nightly",
]

_LOGGER = logging.getLogger(__name__)

STATE_QUEUE_FILLED = "queue_filled"


async def async_setup_memory(hass: HomeAssistant) -> Memory | None:
    """Make memory available when the store opened, with its nightly pass.

    The run_nightly action and the profile command exist even while memory
    is off: they answer that it is.
    """
    async_register_run_nightly(hass)
    websocket_api.async_register_command(hass, websocket_create_profile)
    store = hass.data[DATA_STORE]
    if not store.available:
        return None
    memory = Memory(hass, store)
    try:
        await memory.async_load()
    except StoreError:
        return None
    hass.data[DATA_MEMORY] = memory
    hass.data[DATA_NIGHTLY_JOB] = async_register_job(
        hass, NightlyJob(NightlyPass(hass, memory))
    )
    async_register_commands(hass)
    websocket_api.async_register_command(hass, websocket_move_page)

    @callback
    def went_quiet(conversation_id: str) -> None:
        hass.async_create_task(_async_enqueue(memory, conversation_id))

    async_listen_quiet(hass, went_quiet)
    hass.async_create_background_task(
        _async_fill_queue(hass, memory), f"{DOMAIN} extraction queue"
    )
    return memory


async def _async_enqueue(memory: Memory, conversation_id: str) -> None:
    try:
        await memory.async_write(
            lambda connection, now: extraction.enqueue(connection, conversation_id, now)
        )
    except StoreError:
        # The next pass finds it: it queues every quiet conversation not read.
        _LOGGER.debug("Conversation %s not queued for extraction", conversation_id)


async def _async_fill_queue(hass: HomeAssistant, memory: Memory) -> None:
    """Queue, once, the quiet conversations a database from before the queue holds."""
    record = hass.data[DATA_RECORD]
    try:
        if await memory.async_read(
            lambda connection: runs.get_state(connection, STATE_QUEUE_FILLED)
        ):
            return
        await async_queue_unread(record, memory)
        await memory.async_write(
            lambda connection, now: runs.set_state(connection, STATE_QUEUE_FILLED, "1")
        )
    except StoreError:
        _LOGGER.debug("The extraction queue is filled at the next start")
