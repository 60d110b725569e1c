"""The record's action: delete_conversations, for administrators.

A signed-in member is refused with Unauthorized, as HA's admin-only actions
are.
"""

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

from ..const import (
    ATTR_CONVERSATION_ID,
    ATTR_OLDER_THAN_DAYS,
    DOMAIN,
    MAX_RETENTION_DAYS,
    SERVICE_DELETE_CONVERSATIONS,
)
from ..runtime import DATA_RECORD
from ..store import StoreError, unavailable_error
from .conversation_record import InProgress

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
        raise unavailable_error(
            "record_unavailable", err, ServiceValidationError
        ) from err
    return {"deleted": 1}


@callback
def async_register_services(hass: HomeAssistant) -> None:
    """Register delete_conversations."""
    async_register_admin_service(
        hass,
        DOMAIN,
        SERVICE_DELETE_CONVERSATIONS,
        async_delete_conversations,
        schema=DELETE_CONVERSATIONS_SCHEMA,
        supports_response=SupportsResponse.OPTIONAL,
    )
