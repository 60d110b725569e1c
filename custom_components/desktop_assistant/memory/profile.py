"""The panel's way to start the household's profile before anything was remembered."""

from typing import Any

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant
import probatio as vol

from ..const import DOMAIN
from ..runtime import DATA_MEMORY
from ..store import StoreError
from .pages import ensure_profile


@websocket_api.websocket_command(
    {vol.Required("type"): f"{DOMAIN}/memory/profile/create"}
)
@websocket_api.require_admin
@websocket_api.async_response
async def websocket_create_profile(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """Create the empty profile (or find it); answer its page id."""
    if (memory := hass.data.get(DATA_MEMORY)) is None:
        connection.send_error(msg["id"], "unavailable", "Memory is off")
        return
    try:
        page = await memory.async_write(ensure_profile)
    except StoreError as err:
        connection.send_error(msg["id"], "unavailable", str(err))
        return
    connection.send_result(msg["id"], {"page_id": page.id})
