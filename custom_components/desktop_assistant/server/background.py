"""The server background work (the nightly pass) runs on: the big model if it can."""

import logging

from homeassistant.core import HomeAssistant

from ..const import (
    CONF_FALLBACK_SERVERS,
    CONF_NIGHTLY_FALLBACK,
    DEFAULT_NIGHTLY_FALLBACK,
    NIGHTLY_WAKE_WAIT,
)
from ..runtime import DesktopAssistantConfigEntry
from .client import LlamaServerClient
from .failover import async_wait_until_reachable, loaded_fallbacks

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
