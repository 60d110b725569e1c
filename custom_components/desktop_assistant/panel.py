"""The Assistant sidebar panel: a JavaScript module served from frontend/."""

import hashlib
from pathlib import Path

from homeassistant.components import panel_custom
from homeassistant.components.http import StaticPathConfig
from homeassistant.core import HomeAssistant

PANEL_URL_PATH = "desktop-assistant"
PANEL_ELEMENT = "desktop-assistant-panel"
STATIC_URL = "/desktop_assistant_static"
FRONTEND = Path(__file__).parent / "frontend"
MODULE = FRONTEND / "panel.js"


async def async_register_panel(hass: HomeAssistant) -> None:
    """Add the panel to the sidebar of administrators, where there is a frontend."""
    if "frontend" not in hass.config.components:
        return
    await hass.http.async_register_static_paths(
        [StaticPathConfig(STATIC_URL, str(FRONTEND), cache_headers=False)]
    )
    # The module's hash in its URL: a browser never runs an old panel after an update.
    digest = await hass.async_add_executor_job(_module_digest)
    await panel_custom.async_register_panel(
        hass,
        frontend_url_path=PANEL_URL_PATH,
        webcomponent_name=PANEL_ELEMENT,
        module_url=f"{STATIC_URL}/panel.js?v={digest}",
        sidebar_title="Assistant",
        sidebar_icon="mdi:account-voice",
        require_admin=True,
    )


def _module_digest() -> str:
    return hashlib.sha256(MODULE.read_bytes()).hexdigest()[:12]
