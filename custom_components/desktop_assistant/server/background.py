"""The server background work (the nightly pass) runs on: the big model if it can.

`async_background_generator` is the one place background work chooses its
server, model and slot.
"""

import logging

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant

from ..const import (
    CONF_FALLBACK_SERVERS,
    CONF_NIGHTLY_FALLBACK,
    DEFAULT_NIGHTLY_FALLBACK,
    DOMAIN,
    NIGHTLY_WAKE_WAIT,
    SUBENTRY_AI_TASK,
)
from ..runtime import DesktopAssistantConfigEntry
from .activity import async_get_activity
from .client import LlamaServerClient, LlamaServerError
from .failover import async_wait_until_reachable, loaded_fallbacks
from .generate import Generator
from .reported import server_props

_LOGGER = logging.getLogger(__name__)


async def async_server_for_background(
    hass: HomeAssistant,
    entry: DesktopAssistantConfigEntry,
    wake_wait: float = NIGHTLY_WAKE_WAIT,
) -> tuple[LlamaServerClient, str | None] | None:
    """The client to run background work of `entry` on, and its model.

    The model is None on the entry's own server (the work picks its agents'
    model there). The own server asleep is woken, when it has a MAC, and
    waited for up to `wake_wait` seconds; still asleep, a healthy fallback
    of the entry's agents is used if the entry's `nightly_fallback` option
    allows it, else None (the work is recorded as `no_server`).
    """
    runtime = entry.runtime_data
    if runtime.health.reachable is not True:
        await runtime.health.async_check()
    if runtime.health.reachable is not True and runtime.waker is not None:
        await runtime.waker.async_wake()
        await async_wait_until_reachable(hass, runtime.health, wake_wait)
    if runtime.health.reachable:
        return runtime.client, None
    if not entry.options.get(CONF_NIGHTLY_FALLBACK, DEFAULT_NIGHTLY_FALLBACK):
        return None
    fallback_ids = [
        entry_id
        for subentry in entry.subentries.values()
        for entry_id in subentry.data.get(CONF_FALLBACK_SERVERS) or ()
    ]
    for server in loaded_fallbacks(hass, entry, fallback_ids):
        if server.runtime.health.reachable:
            _LOGGER.info("Background work of %s runs on %s", entry.title, server.name)
            return server.client, server.model
    return None


async def async_background_generator(hass: HomeAssistant) -> Generator | None:
    """Generation for background work, stepping aside for conversations.

    On the first loaded server entry that has a server: its AI task's model,
    else its agent's; the server's last slot when it has several, so that a
    question always finds one free. None when no entry has a server.
    """
    for entry in hass.config_entries.async_entries(DOMAIN):
        if entry.state is not ConfigEntryState.LOADED:
            continue
        if (server := await async_server_for_background(hass, entry)) is None:
            continue
        client, fallback_model = server
        if (model := fallback_model or _entry_model(entry)) is None:
            continue
        slots = await _async_slots(client)
        return Generator(
            client,
            model,
            slot=slots - 1 if slots > 1 else None,
            yield_to=async_get_activity(hass),
        )
    return None


def _entry_model(entry: DesktopAssistantConfigEntry) -> str | None:
    """The model of the entry's AI task, else of its first agent that names one."""
    subentries = sorted(
        entry.subentries.values(),
        key=lambda subentry: subentry.subentry_type != SUBENTRY_AI_TASK,
    )
    return next(
        (sub.data[CONF_MODEL] for sub in subentries if sub.data.get(CONF_MODEL)),
        None,
    )


async def _async_slots(client: LlamaServerClient) -> int:
    """How many slots the server has (llama-server's /props); 1 if unknown."""
    try:
        props = server_props(await client.async_get_json("/props", within=5.0))
    except LlamaServerError as err:
        _LOGGER.debug("Could not read the server's slots: %s", err.kind)
        return 1
    return props.total_slots or 1
