"""The tool files' actions: run_tool, reload, install_examples.

run_tool is for automations and scripts (an administrator's, or no one's);
reload and install_examples are for administrators: a signed-in member is
refused with Unauthorized, as HA's admin-only actions are.
"""

import logging

from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.service import async_register_admin_service
import probatio

from ..access import async_check_may_act
from ..const import (
    ATTR_ARGUMENTS,
    ATTR_TOOL,
    DOMAIN,
    SERVICE_INSTALL_EXAMPLES,
    SERVICE_RELOAD,
    SERVICE_RUN_TOOL,
)
from ..runtime import DATA_TOOLS
from ..tools import ArgumentError, parse_arguments
from .loading import async_install_examples, async_load_tools

_LOGGER = logging.getLogger(__name__)

RUN_TOOL_SCHEMA = probatio.Schema(
    {
        probatio.Required(ATTR_TOOL): cv.string,
        # A mapping or JSON text, checked against the tool's parameters.
        probatio.Optional(ATTR_ARGUMENTS): cv.match_all,
    }
)


async def async_run_tool(call: ServiceCall) -> ServiceResponse:
    """Run a tool; a wrong call raises, what the tool answers is the response."""
    registry = call.hass.data[DATA_TOOLS]
    name = call.data[ATTR_TOOL]
    arguments = call.data.get(ATTR_ARGUMENTS)
    await async_check_may_act(call.hass, call.context)
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
    if spec.changes:
        # An automation or script is its author's decision: no question.
        _LOGGER.info("Running %s for the run_tool action: %s", name, arguments)
    return {"result": await registry.async_run(name, arguments)}


async def async_reload(call: ServiceCall) -> None:
    """Read the config folder again."""
    await async_load_tools(call.hass)


async def async_install_example_tools(call: ServiceCall) -> ServiceResponse:
    """Copy the example tools into the config folder, keeping what is there."""
    try:
        report = await async_install_examples(call.hass)
    except OSError as err:
        raise HomeAssistantError(
            translation_domain=DOMAIN,
            translation_key="cannot_install_examples",
            translation_placeholders={"error": str(err)},
        ) from err
    return {"installed": list(report.installed), "skipped": list(report.skipped)}


@callback
def async_register_services(hass: HomeAssistant) -> None:
    """Register run_tool, reload and install_examples."""
    hass.services.async_register(
        DOMAIN,
        SERVICE_RUN_TOOL,
        async_run_tool,
        schema=RUN_TOOL_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    async_register_admin_service(hass, DOMAIN, SERVICE_RELOAD, async_reload)
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_INSTALL_EXAMPLES,
        async_install_example_tools,
        supports_response=SupportsResponse.OPTIONAL,
    )
