"""Diagnostics for desktop_assistant, with the API key redacted."""

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant

from . import DesktopAssistantConfigEntry
from .record import DATA_RECORD, database
from .store import StoreError

TO_REDACT = {CONF_API_KEY}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> dict[str, Any]:
    """Return the entry, its agents' options and the record's size.

    Of the conversation record only counts: transcripts stay out.
    """
    diagnostics: dict[str, Any] = {
        "entry": async_redact_data(entry.as_dict(), TO_REDACT)
    }
    if (record := hass.data.get(DATA_RECORD)) is not None:
        diagnostics["record"] = {"available": record.available}
        if record.available:
            try:
                diagnostics["record"] |= await record.async_read(database.counts)
            except StoreError as err:
                diagnostics["record"]["error"] = str(err)
    return diagnostics
