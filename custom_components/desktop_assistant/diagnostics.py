"""Diagnostics for desktop_assistant, with the API key and URL credentials redacted."""

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.const import CONF_API_KEY, CONF_URL
from homeassistant.core import HomeAssistant

from .record import database
from .runtime import DATA_RECORD, DesktopAssistantConfigEntry
from .server.credentials import without_credentials
from .store import StoreError

TO_REDACT = {CONF_API_KEY}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> dict[str, Any]:
    """Return the entry, its agents' options and the record's size.

    Of the conversation record only counts: transcripts stay out.
    """
    data = async_redact_data(entry.as_dict(), TO_REDACT)
    data["title"] = without_credentials(data["title"])
    data["data"][CONF_URL] = without_credentials(data["data"][CONF_URL])
    diagnostics: dict[str, Any] = {"entry": data}
    if (record := hass.data.get(DATA_RECORD)) is not None:
        diagnostics["record"] = {"available": record.available}
        if record.available:
            try:
                diagnostics["record"] |= await record.async_read(database.counts)
            except StoreError as err:
                diagnostics["record"]["error"] = str(err)
    return diagnostics
