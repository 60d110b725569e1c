"""Adding a llama-server entry with one conversation agent, as tests need it."""

from typing import Any

from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import DOMAIN

from .llama_server import MODEL_ID


async def async_add_agent(
    hass: HomeAssistant, url: str, options: dict[str, Any]
) -> tuple[MockConfigEntry, str]:
    """Set up an entry for the server at `url`; return it and its agent's entity id."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_URL: url},
        subentries_data=[
            {
                "subentry_type": "conversation",
                "title": MODEL_ID,
                "data": options,
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    (subentry_id,) = entry.subentries
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", DOMAIN, subentry_id
    )
    assert entity_id is not None
    return entry, entity_id
