"""Diagnostics for desktop_assistant, with the API key redacted."""

from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant

from . import DesktopAssistantConfigEntry

TO_REDACT = {CONF_API_KEY}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> dict[str, Any]:
    """Return the entry and its agents' options."""
    return {"entry": async_redact_data(entry.as_dict(), TO_REDACT)}
