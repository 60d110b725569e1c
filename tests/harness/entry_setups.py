"""How many times a config entry was set up, as Home Assistant announces it."""

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
    ConfigEntryState,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_connect


class EntrySetups:
    """Counts the entry's setups from now on: each one enters SETUP_IN_PROGRESS.

    Home Assistant announces every change of an entry, its state's among
    them, on its dispatcher, so nothing is replaced to count. An update of
    the entry during a setup is announced too: only a change of state counts.
    """

    def __init__(self, hass: HomeAssistant, entry: ConfigEntry) -> None:
        """Start counting; the count stops when the test's Home Assistant stops."""
        self.count = 0
        state = entry.state

        @callback
        def changed(change: ConfigEntryChange, changed_entry: ConfigEntry) -> None:
            nonlocal state
            if (
                change is not ConfigEntryChange.UPDATED
                or changed_entry.entry_id != entry.entry_id
                or changed_entry.state is state
            ):
                return
            state = changed_entry.state
            if state is ConfigEntryState.SETUP_IN_PROGRESS:
                self.count += 1

        async_dispatcher_connect(hass, SIGNAL_CONFIG_ENTRY_CHANGED, changed)
