"""Chat: typed threads each household member comes back to days later.

`async_setup_chat` registers its commands and, where there is a frontend,
its own sidebar panel, open to every user (the Assistant panel is for
administrators; docs/panel.md says why Chat is apart). A thread is a
conversation of the record with an owner (`chat_threads`, `SCHEMA`).
"""

from typing import Final

from homeassistant.components import panel_custom
from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import HomeAssistant

# Chat's modules are the panel's, served from its static path.
from ..panel import STATIC_URL, modules_digest
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
    # The modules' hash in the URL: a browser never runs an old page.
    digest = await hass.async_add_executor_job(modules_digest)
    await panel_custom.async_register_panel(
        hass,
        frontend_url_path=CHAT_URL_PATH,
        webcomponent_name=CHAT_ELEMENT,
        module_url=f"{STATIC_URL}/chat.js?v={digest}",
        sidebar_title="Chat",
        sidebar_icon="mdi:chat-processing",
        require_admin=False,
    )
