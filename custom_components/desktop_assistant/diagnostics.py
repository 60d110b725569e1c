"""Diagnostics for desktop_assistant, with the API key and URL credentials redacted."""

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.const import CONF_API_KEY, CONF_URL
from homeassistant.core import HomeAssistant

from . import DesktopAssistantConfigEntry
from .credentials import without_credentials

TO_REDACT = {CONF_API_KEY}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> dict[str, Any]:
    """Return the entry and its agents' options."""
    data = async_redact_data(entry.as_dict(), TO_REDACT)
    data["title"] = without_credentials(data["title"])
    data["data"][CONF_URL] = without_credentials(data["data"][CONF_URL])
    return {"entry": data}
