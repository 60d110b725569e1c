"""The wake_server action: an entry's machine gets its magic packet.

For automations, and for the panel's *Wake*, which goes through it. The
panel's Wake is for administrators: so is the action.
"""

from homeassistant.const import ATTR_CONFIG_ENTRY_ID
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.service import (
    async_get_config_entry,
    async_register_admin_service,
)
import probatio

from ..const import DOMAIN, SERVICE_WAKE_SERVER
from ..runtime import DesktopAssistantConfigEntry

WAKE_SERVER_SCHEMA = probatio.Schema(
    {probatio.Required(ATTR_CONFIG_ENTRY_ID): cv.string}
)


async def async_wake_server(call: ServiceCall) -> ServiceResponse:
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


@callback
def async_register_services(hass: HomeAssistant) -> None:
    """Register wake_server."""
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_WAKE_SERVER,
        async_wake_server,
        schema=WAKE_SERVER_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
