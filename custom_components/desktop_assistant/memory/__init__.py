"""Long-term memory: pages, the tools that write and read them, the nightly pass.

`async_setup_memory` opens it on the store (its tables are `SCHEMA`), queues
the conversations the record says went quiet, registers the nightly pass
(`nightly/`) as a job, and offers it as the `run_nightly` action
(administrators, automations and scripts), which answers `memory_unavailable`
while memory is off.
"""

import logging

from homeassistant.components import websocket_api
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant, callback

from ..const import DOMAIN
from ..jobs import RegisteredJob, async_register_job
from ..record import async_listen_quiet
from ..runtime import (
    DATA_MEMORY,
    DATA_NIGHTLY,
    DATA_NIGHTLY_JOB,
    DATA_NIGHTLY_SCHEDULE,
    DATA_RECORD,
    DATA_STORE,
)
from ..store import StoreError
from .errors import ERROR_CODES
from .household import Memory
from .nightly import extraction, runs
from .nightly.job import NightlyJob, async_register_run_nightly
from .nightly.nightly_pass import NightlyPass
from .nightly.queue import async_queue_unread
from .nightly.schedule import NightlySchedule, schedule_entry
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
    "async_schedule_nightly",
    "async_setup_memory",
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
    nightly = NightlyPass(hass, memory)
    job = async_register_job(hass, NightlyJob(hass, nightly))
    await _async_hand_over_runs(memory, job)
    hass.data[DATA_MEMORY] = memory
    hass.data[DATA_NIGHTLY] = nightly
    hass.data[DATA_NIGHTLY_JOB] = job
    hass.data[DATA_NIGHTLY_SCHEDULE] = NightlySchedule(hass, nightly, job)
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


async def _async_hand_over_runs(memory: Memory, job: RegisteredJob) -> None:
    """Hand the jobs registry the runs memory kept before it kept them.

    A database from before the registry has the pass's runs only in memory's
    own rows, set aside by the migration; the registry keeps them from then
    on, and each row here is keyed by the registry's id of it, so that the
    Nightly page lists and reverts them. A store fault leaves it for the
    next start.
    """
    try:
        earlier = await memory.async_read(runs.set_aside_runs)
        if not earlier:
            return
        kept = await job.async_adopt_runs(earlier)
        links = {run["run_id"]: kept.get(run["started_at"]) for run in earlier}
        await memory.async_write(
            lambda connection, now: runs.link_runs(connection, links)
        )
    except StoreError:
        _LOGGER.debug("The nightly runs are handed to the Jobs page at the next start")


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
