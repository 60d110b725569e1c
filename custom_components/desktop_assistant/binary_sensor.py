"""Whether the entry's llama-server answers: a connectivity sensor fed by its health check."""

from typing import Any

from homeassistant.components.binary_sensor import (
    BinarySensorDeviceClass,
    BinarySensorEntity,
)
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .runtime import DesktopAssistantConfigEntry

# The sensor only reads the health check's state.
PARALLEL_UPDATES = 0


async def async_setup_entry(
    hass: HomeAssistant,
    entry: DesktopAssistantConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the server's connectivity sensor."""
    async_add_entities([ServerConnectivitySensor(entry)])


class ServerConnectivitySensor(BinarySensorEntity):
    """On while llama-server answers its health check; unknown before the first."""

    _attr_device_class = BinarySensorDeviceClass.CONNECTIVITY
    _attr_entity_category = EntityCategory.DIAGNOSTIC
    _attr_has_entity_name = True
    _attr_translation_key = "server"
    _attr_should_poll = False

    def __init__(self, entry: DesktopAssistantConfigEntry) -> None:
        """Report on the entry's server health."""
        self._health = entry.runtime_data.health
        self._attr_unique_id = f"{entry.entry_id}_server"

    async def async_added_to_hass(self) -> None:
        """Update whenever the health changes."""
        self.async_on_remove(self._health.async_add_listener(self._async_changed))

    @callback
    def _async_changed(self) -> None:
        self.async_write_ha_state()

    @property
    def is_on(self) -> bool | None:
        """Whether the server answered its last check."""
        return self._health.reachable

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        """The model it serves and, while it is down, why (credential-free)."""
        return {"model": self._health.model, "error": self._health.last_error}
