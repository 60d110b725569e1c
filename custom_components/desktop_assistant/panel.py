"""The Assistant sidebar panel: JavaScript modules served from frontend/, and describe.

The panel learns what it may not hard-code from `desktop_assistant/panel/describe`:
the page kinds, the run outcomes and the error codes of the websocket API (each has a
sentence under `errors` in `frontend/translations/`). Its text comes from
`frontend/translations/<language>.json`, served with the modules, in the
language of the person's profile.
"""

import hashlib
from pathlib import Path
from typing import Any, Final

from homeassistant.components import panel_custom, websocket_api
from homeassistant.components.http import StaticPathConfig
from homeassistant.core import HomeAssistant
import probatio as vol

from .const import DOMAIN, PANEL_URL_PATH
from .jobs import KINDS as RUN_OUTCOMES
from .members import async_members
from .memory import ERROR_CODES as MEMORY_ERROR_CODES, PAGE_KINDS
from .tool_files import ERROR_CODES as TOOL_FILES_ERROR_CODES
from .websocket_commands import ERR_IN_PROGRESS, ERR_UNAVAILABLE, admin_command

PANEL_ELEMENT = "desktop-assistant-panel"
STATIC_URL = "/desktop_assistant_static"
FRONTEND = Path(__file__).parent / "frontend"
MODULE = FRONTEND / "panel.js"
# Every code a command of the panel answers with a sentence for.
ERROR_CODES: Final = tuple(
    dict.fromkeys(
        (
            websocket_api.ERR_NOT_FOUND,
            ERR_IN_PROGRESS,
            ERR_UNAVAILABLE,
            *MEMORY_ERROR_CODES,
            *TOOL_FILES_ERROR_CODES,
        )
    )
)


@admin_command({vol.Required("type"): f"{DOMAIN}/panel/describe"})
async def websocket_describe(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """What the panel reads from the Python side instead of a list of its own.

    The members name whose each conversation and page is.
    """
    return {
        "page_kinds": list(PAGE_KINDS),
        "run_outcomes": list(RUN_OUTCOMES),
        "error_codes": list(ERROR_CODES),
        "members": await async_members(hass),
    }


async def async_register_panel(hass: HomeAssistant) -> None:
    """Add the panel to the sidebar of administrators, where there is a frontend."""
    websocket_api.async_register_command(hass, websocket_describe)
    if "frontend" not in hass.config.components:
        return
    await hass.http.async_register_static_paths(
        [StaticPathConfig(STATIC_URL, str(FRONTEND), cache_headers=False)]
    )
    await async_register_page(
        hass,
        PANEL_URL_PATH,
        PANEL_ELEMENT,
        "panel.js",
        ("Assistant", "mdi:account-voice"),
        require_admin=True,
    )


async def async_register_page(
    hass: HomeAssistant,
    url_path: str,
    element: str,
    module: str,
    sidebar: tuple[str, str],
    *,
    require_admin: bool,
) -> None:
    """Add a sidebar entry (title, icon) whose page is one of frontend/'s modules."""
    # The modules' hash in the URL: a browser never runs an old page after an update.
    digest = await hass.async_add_executor_job(modules_digest)
    title, icon = sidebar
    await panel_custom.async_register_panel(
        hass,
        frontend_url_path=url_path,
        webcomponent_name=element,
        module_url=f"{STATIC_URL}/{module}?v={digest}",
        sidebar_title=title,
        sidebar_icon=icon,
        require_admin=require_admin,
    )


def modules_digest() -> str:
    """A short hash of the served modules, for their URLs."""
    digest = hashlib.sha256()
    for module in sorted(FRONTEND.glob("*.js")):
        digest.update(module.read_bytes())
    return digest.hexdigest()[:12]
