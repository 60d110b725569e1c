"""Actions: run_tool (for automations and scripts) and reload (the config folder)."""

from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import ServiceValidationError
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
from .tools import ArgumentError, parse_arguments

RUN_TOOL_SCHEMA = probatio.Schema(
    {
        probatio.Required(ATTR_TOOL): cv.string,
        # A mapping or JSON text, checked against the tool's parameters.
        probatio.Optional(ATTR_ARGUMENTS): cv.match_all,
    }
)


@callback
def async_setup_services(hass: HomeAssistant) -> None:
    """Register the integration's actions."""

    async def run_tool(call: ServiceCall) -> ServiceResponse:
        """Run a tool; a wrong call raises, what the tool answers is the response."""
        registry = hass.data[DATA_TOOLS]
        name = call.data[ATTR_TOOL]
        arguments = call.data.get(ATTR_ARGUMENTS)
        if (spec := registry.get(name)) is None:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="unknown_tool",
                translation_placeholders={
                    "tool": name,
                    "tools": ", ".join(t.name for t in registry.tools) or "-",
                },
            )
        try:
            parse_arguments(spec, arguments)
        except ArgumentError as err:
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="invalid_arguments",
                translation_placeholders={"tool": name, "error": str(err)},
            ) from err
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
