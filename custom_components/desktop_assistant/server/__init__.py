"""Talking to llama-server: the client, the one stream reader, generation, who goes first.

`async_setup_servers` registers the panel's Servers page commands and the
wake_server action; each entry's client, health and waker are made when the
entry is set up.
"""

from homeassistant.core import HomeAssistant, callback

from .services import async_register_services
from .websocket import async_register_commands

__all__ = ["async_setup_servers"]


@callback
def async_setup_servers(hass: HomeAssistant) -> None:
    """Register the Servers page's commands and the wake_server action."""
    async_register_commands(hass)
    async_register_services(hass)
