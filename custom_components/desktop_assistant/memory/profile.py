"""The panel's way to start the household's profile before anything was remembered."""

from typing import Any

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant
import probatio as vol

from ..const import DOMAIN
from ..runtime import DATA_MEMORY
from ..websocket_commands import ERR_UNAVAILABLE, Refused, admin_command
from .pages import ensure_profile


@admin_command({vol.Required("type"): f"{DOMAIN}/memory/profile/create"})
async def websocket_create_profile(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Create the empty profile (or find it); answer its page id."""
    if (memory := hass.data.get(DATA_MEMORY)) is None:
        raise Refused(ERR_UNAVAILABLE, "Memory is off")
    page = await memory.async_write(ensure_profile)
    return {"page_id": page.id}
