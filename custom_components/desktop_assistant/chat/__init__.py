"""Chat: typed threads each household member comes back to days later.

`async_setup_chat` registers its commands and, where there is a frontend,
its own sidebar panel, open to every user (the Assistant panel is for
administrators; docs/panel.md says why Chat is apart). A thread is a
conversation of the record with an owner (`chat_threads`, `SCHEMA`).
"""

from typing import Final

from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import HomeAssistant

# Chat's modules are the panel's, served from its static path.
from ..panel import async_register_page
from ..runtime import DATA_CHAT
from ..store import Store
from .schema import SCHEMA
from .turns import ChatTurns
from .websocket import async_register_commands

__all__ = ["CHAT_URL_PATH", "SCHEMA", "async_setup_chat"]

CHAT_URL_PATH: Final = "desktop-assistant-chat"
CHAT_ELEMENT: Final = "desktop-assistant-chat"


async def async_setup_chat(hass: HomeAssistant, store: Store) -> None:
    """Run chat turns and offer their commands; add Chat to every sidebar."""
    turns = hass.data[DATA_CHAT] = ChatTurns(hass, store)
    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, turns.async_stop_all)
    async_register_commands(hass)
    if "frontend" not in hass.config.components:
        return
    await async_register_page(
        hass,
        CHAT_URL_PATH,
        CHAT_ELEMENT,
        "chat.js",
        ("Chat", "mdi:chat-processing"),
        require_admin=False,
    )
