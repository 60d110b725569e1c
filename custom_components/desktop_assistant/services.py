"""Actions: run_tool (for automations and scripts), reload and install_examples."""

from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.service import async_register_admin_service
import probatio

from .const import (
    ATTR_ARGUMENTS,
    ATTR_TOOL,
    DATA_TOOLS,
    DOMAIN,
    SERVICE_INSTALL_EXAMPLES,
    SERVICE_RELOAD,
    SERVICE_RUN_TOOL,
)
from .tool_folder import async_install_examples, async_load_tools

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
        text = await registry.async_run(
            call.data[ATTR_TOOL], call.data.get(ATTR_ARGUMENTS)
        )
        return {"result": text}

    async def reload(call: ServiceCall) -> None:
        await async_load_tools(hass)

    async def install_examples(call: ServiceCall) -> ServiceResponse:
        try:
            report = await async_install_examples(hass)
        except OSError as err:
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key="cannot_install_examples",
                translation_placeholders={"error": str(err)},
            ) from err
        return {"installed": list(report.installed), "skipped": list(report.skipped)}

    hass.services.async_register(
        DOMAIN,
        SERVICE_RUN_TOOL,
        run_tool,
        schema=RUN_TOOL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    async_register_admin_service(hass, DOMAIN, SERVICE_RELOAD, reload)
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_INSTALL_EXAMPLES,
        install_examples,
        supports_response=SupportsResponse.OPTIONAL,
    )
