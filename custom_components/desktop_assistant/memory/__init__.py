"""Long-term memory: pages, the tools that write and read them, the nightly pass.

`async_setup_memory` opens it on the store (its tables are `SCHEMA`), queues
the conversations the record says went quiet, and offers the nightly pass as
the `run_nightly` action (administrators, automations and scripts).
"""

import logging

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import HomeAssistantError

from ..access import async_check_may_act
from ..const import DOMAIN, SERVICE_RUN_NIGHTLY
from ..record import async_listen_quiet
from ..runtime import (
    DATA_MEMORY,
    DATA_NIGHTLY,
    DATA_NIGHTLY_SCHEDULE,
    DATA_RECORD,
    DATA_STORE,
)
from ..store import StoreError
from .household import Memory
from .nightly import extraction, runs
from .nightly.nightly_pass import NightlyPass
from .nightly.queue import async_queue_unread
from .nightly.schedule import NightlySchedule, schedule_entry
from .schema import SCHEMA
from .websocket import async_register_commands

__all__ = ["SCHEMA", "Memory", "async_schedule_nightly", "async_setup_memory"]

_LOGGER = logging.getLogger(__name__)

STATE_QUEUE_FILLED = "queue_filled"


async def async_setup_memory(hass: HomeAssistant) -> Memory | None:
    """Make memory available when the store opened, with its nightly pass."""
    store = hass.data[DATA_STORE]
    if not store.available:
        return None
    memory = Memory(hass, store)
    try:
        await memory.async_load()
        if interrupted := await memory.async_write(
            lambda connection, now: runs.end_interrupted(connection)
        ):
            _LOGGER.info("Marked %s nightly run(s) a stop interrupted", interrupted)
    except StoreError:
        return None
    nightly = NightlyPass(hass, memory)
    hass.data[DATA_MEMORY] = memory
    hass.data[DATA_NIGHTLY] = nightly
    hass.data[DATA_NIGHTLY_SCHEDULE] = NightlySchedule(hass, nightly)
    async_register_commands(hass)

    @callback
    def went_quiet(conversation_id: str) -> None:
        hass.async_create_task(_async_enqueue(memory, conversation_id))

    async_listen_quiet(hass, went_quiet)
    hass.async_create_background_task(
        _async_fill_queue(hass, memory), f"{DOMAIN} extraction queue"
    )

    async def run_nightly(call: ServiceCall) -> ServiceResponse:
        # Automations and scripts (no user, or the system) run the pass.
        await async_check_may_act(hass, call.context)
        try:
            return await nightly.async_run("action")
        except StoreError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="memory_unavailable",
                translation_placeholders={"error": str(err)},
            ) from err

    hass.services.async_register(
        DOMAIN,
        SERVICE_RUN_NIGHTLY,
        run_nightly,
        supports_response=SupportsResponse.OPTIONAL,
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


@callback
def async_schedule_nightly(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """Time the nightly pass by the first loaded entry, again when `entry` unloads.

    Only the entry that times the pass sets or hands on its timers: another
    entry's setup or unload leaves them, and their catch-up check, alone.
    """
    if (schedule := hass.data.get(DATA_NIGHTLY_SCHEDULE)) is None:
        return
    if schedule_entry(hass, adding=entry) is entry:
        schedule.async_schedule(entry)

    @callback
    def unloaded() -> None:
        if schedule_entry(hass, adding=entry) is not entry:
            return
        if (remaining := schedule_entry(hass, removing=entry)) is None:
            schedule.async_stop()
        else:
            schedule.async_schedule(remaining)

    entry.async_on_unload(unloaded)
