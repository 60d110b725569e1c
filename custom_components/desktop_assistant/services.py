"""Actions: run_tool, reload, install_examples, delete_conversations, wake_server.

run_tool is for automations and scripts (an administrator's, or no one's);
delete_conversations acts on the conversation record; wake_server sends a
server's machine its magic packet. Each action is one module-level handler.
All are for administrators: a signed-in member is refused with Unauthorized,
as HA's admin-only actions are.
"""

import logging

from homeassistant.const import ATTR_CONFIG_ENTRY_ID
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.service import (
    async_get_config_entry,
    async_register_admin_service,
)
import probatio

from .access import async_check_may_act
from .const import (
    ATTR_ARGUMENTS,
    ATTR_CONVERSATION_ID,
    ATTR_OLDER_THAN_DAYS,
    ATTR_TOOL,
    DOMAIN,
    MAX_RETENTION_DAYS,
    SERVICE_DELETE_CONVERSATIONS,
    SERVICE_INSTALL_EXAMPLES,
    SERVICE_RELOAD,
    SERVICE_RUN_TOOL,
    SERVICE_WAKE_SERVER,
)
from .record import InProgress
from .runtime import DATA_RECORD, DATA_TOOLS, DesktopAssistantConfigEntry
from .store import StoreError
from .tool_files import async_install_examples, async_load_tools
from .tools import ArgumentError, parse_arguments

_LOGGER = logging.getLogger(__name__)

WAKE_SERVER_SCHEMA = probatio.Schema(
    {probatio.Required(ATTR_CONFIG_ENTRY_ID): cv.string}
)
RUN_TOOL_SCHEMA = probatio.Schema(
    {
        probatio.Required(ATTR_TOOL): cv.string,
        # A mapping or JSON text, checked against the tool's parameters.
        probatio.Optional(ATTR_ARGUMENTS): cv.match_all,
    }
)


DELETE_CONVERSATIONS_SCHEMA = probatio.Schema(
    probatio.All(
        {
            probatio.Exclusive(ATTR_OLDER_THAN_DAYS, "which"): probatio.All(
                probatio.Coerce(float), probatio.Range(min=0, max=MAX_RETENTION_DAYS)
            ),
            probatio.Exclusive(ATTR_CONVERSATION_ID, "which"): cv.string,
        },
        cv.has_at_least_one_key(ATTR_OLDER_THAN_DAYS, ATTR_CONVERSATION_ID),
    )
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


async def async_delete_conversations(call: ServiceCall) -> ServiceResponse:
    """Delete one conversation, or those older than some days."""
    record = call.hass.data[DATA_RECORD]
    try:
        if ATTR_CONVERSATION_ID not in call.data:
            days = call.data[ATTR_OLDER_THAN_DAYS]
            return {"deleted": await record.async_delete_older_than(days)}
        conversation_id = call.data[ATTR_CONVERSATION_ID]
        if not await record.async_delete(conversation_id):
            raise ServiceValidationError(
                translation_domain=DOMAIN,
                translation_key="conversation_not_found",
                translation_placeholders={"conversation_id": conversation_id},
            )
    except InProgress as err:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="conversation_in_progress",
            translation_placeholders={"conversation_id": str(err)},
        ) from err
    except StoreError as err:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="record_unavailable",
            translation_placeholders={"error": str(err)},
        ) from err
    return {"deleted": 1}


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
def async_setup_services(hass: HomeAssistant) -> None:
    """Register the integration's actions."""
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
        SERVICE_DELETE_CONVERSATIONS,
        async_delete_conversations,
        schema=DELETE_CONVERSATIONS_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_INSTALL_EXAMPLES,
        async_install_example_tools,
        supports_response=SupportsResponse.OPTIONAL,
    )


@callback
def async_setup_wake_service(hass: HomeAssistant) -> None:
    """Register wake_server: the magic packet to an entry's machine, for automations."""
    # The panel's Wake is for administrators: so is the action.
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_WAKE_SERVER,
        _async_wake_server,
        schema=WAKE_SERVER_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )


async def _async_wake_server(call: ServiceCall) -> ServiceResponse:
    """Wake the entry's machine; its server is checked soon after."""
    entry: DesktopAssistantConfigEntry = async_get_config_entry(
        call.hass, DOMAIN, call.data[ATTR_CONFIG_ENTRY_ID]
    )
    runtime = entry.runtime_data
    if runtime.waker is None:
        raise ServiceValidationError(
            translation_domain=DOMAIN,
            translation_key="no_wake_mac",
            translation_placeholders={"server": entry.title},
        )
    sent = await runtime.waker.async_wake()
    runtime.health.async_check_soon()
    return {"sent": sent}
