"""The Home Assistant side of the tool files: the config folder's tools in HA.

`async_setup_tool_files` loads them into a registry shared through
`hass.data` (as Assist tools, intents and the run_tool action), registers
the Tools page's commands and the actions, and records every run for the
panel. `SCHEMA` is its table; `ERROR_CODES` are the codes its commands
refuse with.
"""

from pathlib import Path

from homeassistant.core import HomeAssistant

from ..const import CONFIG_FOLDER
from ..runtime import DATA_TOOLS
from ..store import Store
from ..tools import ToolFolder, ToolRegistry
from .loading import async_install_examples, async_load_tools
from .runs import async_record_runs
from .schema import SCHEMA
from .services import async_register_services
from .websocket import ERROR_CODES, async_register_commands

__all__ = [
    "ERROR_CODES",
    "SCHEMA",
    "async_install_examples",
    "async_load_tools",
    "async_setup_tool_files",
]


async def async_setup_tool_files(hass: HomeAssistant, store: Store) -> ToolRegistry:
    """Load the tools once, at integration setup, with their commands and actions."""
    registry = ToolRegistry(
        ToolFolder(Path(hass.config.path(CONFIG_FOLDER))),
        # Read at each run: the zone may change while HA runs.
        base_env=lambda: {"TZ": hass.config.time_zone},
    )
    hass.data[DATA_TOOLS] = registry
    await async_load_tools(hass)
    async_register_services(hass)
    async_register_commands(hass)
    async_record_runs(hass, registry, store)
    return registry
