"""The profile's size against its budget, as a diagnostic sensor."""

from typing import Any

from homeassistant.components.sensor import SensorEntity, SensorStateClass
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .memory import Memory
from .runtime import DATA_MEMORY, DesktopAssistantConfigEntry


async def async_setup_entry(
    hass: HomeAssistant,
    entry: DesktopAssistantConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add the household profile's size sensor when memory is available."""
    if (memory := hass.data.get(DATA_MEMORY)) is not None:
        async_add_entities([ProfileSizeSensor(entry, memory)])


class ProfileSizeSensor(SensorEntity):
    """Estimated tokens of the household profile (characters / CHARS_PER_TOKEN)."""

    _attr_entity_category = EntityCategory.DIAGNOSTIC
    _attr_has_entity_name = True
    _attr_translation_key = "household_profile_size"
    _attr_native_unit_of_measurement = "tokens"
    _attr_state_class = SensorStateClass.MEASUREMENT
    _attr_should_poll = False

    def __init__(self, entry: DesktopAssistantConfigEntry, memory: Memory) -> None:
        """Report on `memory`."""
        self._memory = memory
        # Kept from before the rename, so an existing sensor keeps its history.
        self._attr_unique_id = f"{entry.entry_id}_profile_size"

    async def async_added_to_hass(self) -> None:
        """Update whenever memory changes."""
        self.async_on_remove(self._memory.async_add_listener(self._async_changed))

    @callback
    def _async_changed(self) -> None:
        self.async_write_ha_state()

    @property
    def native_value(self) -> int:
        """The profile's estimated tokens."""
        return self._memory.profile_tokens

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        """The budget, and whether the profile is over it."""
        return {
            "budget": self._memory.profile_budget,
            "over_budget": self._memory.profile_tokens > self._memory.profile_budget,
        }
