"""Actions: run_tool (for automations and scripts) and reload (the config folder)."""

import logging

from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.service import async_register_admin_service
import probatio

from .const import (
    ATTR_ARGUMENTS,
    ATTR_TOOL,
    DATA_TOOLS,
    DOMAIN,
    SERVICE_RELOAD,
    SERVICE_RUN_TOOL,
)
from .tool_folder import async_load_tools

_LOGGER = logging.getLogger(__name__)

RUN_TOOL_SCHEMA = probatio.Schema(
    {
        probatio.Required(ATTR_TOOL): cv.string,
        # A mapping or JSON text; whatever it is, the registry answers bad
        # arguments with `error: ...` text rather than an exception.
        probatio.Optional(ATTR_ARGUMENTS): cv.match_all,
    }
)


@callback
def async_setup_services(hass: HomeAssistant) -> None:
    """Register the integration's actions."""

    async def run_tool(call: ServiceCall) -> ServiceResponse:
        registry = hass.data[DATA_TOOLS]
        name, arguments = call.data[ATTR_TOOL], call.data.get(ATTR_ARGUMENTS)
        if (spec := registry.get(name)) is not None and spec.changes:
            # An automation or script is its author's decision: no question.
            _LOGGER.info("Running %s for the run_tool action: %s", name, arguments)
        return {"result": await registry.async_run(name, arguments)}

    async def reload(call: ServiceCall) -> None:
        await async_load_tools(hass)

    hass.services.async_register(
        DOMAIN,
        SERVICE_RUN_TOOL,
        run_tool,
        schema=RUN_TOOL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    async_register_admin_service(hass, DOMAIN, SERVICE_RELOAD, reload)
