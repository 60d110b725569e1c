"""The entity of an agent or AI task: its device, its options, its platform setup."""

from collections.abc import Callable, Coroutine
from typing import Any

from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .const import DEFAULT_AGENT_OPTIONS, DOMAIN
from .runtime import DesktopAssistantConfigEntry
from .text import model_name


def subentry_platform_setup(
    subentry_type: str,
    entity_class: Callable[
        [DesktopAssistantConfigEntry, ConfigSubentry], "DesktopAssistantEntity"
    ],
) -> Callable[
    [HomeAssistant, DesktopAssistantConfigEntry, AddConfigEntryEntitiesCallback],
    Coroutine[Any, Any, None],
]:
    """A platform's `async_setup_entry`: one entity for each subentry of the type.

    The conversation and AI task platforms set up the same way; each entity
    belongs to its subentry, so it goes and comes with it.
    """

    async def async_setup_entry(
        hass: HomeAssistant,
        entry: DesktopAssistantConfigEntry,
        async_add_entities: AddConfigEntryEntitiesCallback,
    ) -> None:
        for subentry in entry.subentries.values():
            if subentry.subentry_type == subentry_type:
                async_add_entities(
                    [entity_class(entry, subentry)],
                    config_subentry_id=subentry.subentry_id,
                )

    return async_setup_entry


class DesktopAssistantEntity(Entity):
    """An agent of a llama-server entry: its device and its options."""

    _attr_has_entity_name = True
    _attr_name = None

    def __init__(
        self, entry: DesktopAssistantConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Describe the agent as a service device named after its subentry."""
        self.entry = entry
        self.subentry = subentry
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="llama.cpp",
            # The model's file, not the path llama-server was started with.
            model=model_name(subentry.data.get(CONF_MODEL) or "") or None,
            entry_type=dr.DeviceEntryType.SERVICE,
        )

    @property
    def options(self) -> dict[str, Any]:
        """The agent's options, defaults filled in."""
        return DEFAULT_AGENT_OPTIONS | dict(self.subentry.data)
