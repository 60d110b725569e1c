"""A Repairs issue for an agent that has had no reachable server for a while."""

from datetime import datetime

from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_MODEL
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.dispatcher import async_dispatcher_connect
from homeassistant.helpers.event import async_call_later

from ..const import (
    CONF_FALLBACK_SERVERS,
    DOMAIN,
    NO_SERVER_ISSUE_AFTER,
    PANEL_URL_PATH,
)
from ..runtime import DesktopAssistantConfigEntry
from .failover import Server, loaded_fallbacks
from .health import SIGNAL_HEALTH


class NoServerWatch:
    """The `no_server` issue of one agent: raised, removed.

    Raised after NO_SERVER_ISSUE_AFTER seconds with the agent's own server
    and every fallback down; removed when one is up.

    Any server's health change is looked at, through SIGNAL_HEALTH.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        entry: DesktopAssistantConfigEntry,
        subentry: ConfigSubentry,
    ) -> None:
        """Watch the servers of one agent (a subentry of `entry`)."""
        self.hass = hass
        self.entry = entry
        self.subentry = subentry
        self.issue_id = f"no_server_{subentry.subentry_id}"
        self._timer: CALLBACK_TYPE | None = None

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Look now and at every health change; return what stops watching."""
        unsubscribe = async_dispatcher_connect(
            self.hass, SIGNAL_HEALTH, self.async_evaluate
        )
        self.async_evaluate()

        def stop() -> None:
            # An agent removed or reloaded leaves no issue behind.
            unsubscribe()
            self._cancel_timer()
            ir.async_delete_issue(self.hass, DOMAIN, self.issue_id)

        return stop

    @callback
    def async_evaluate(self) -> None:
        """Start the clock when all servers are down; clear it all when one is up."""
        own = Server(self.entry, self.subentry.data.get(CONF_MODEL, ""))
        fallbacks = loaded_fallbacks(
            self.hass, self.entry, self.subentry.data.get(CONF_FALLBACK_SERVERS) or ()
        )
        if any(s.runtime.health.reachable is not False for s in [own, *fallbacks]):
            self._cancel_timer()
            ir.async_delete_issue(self.hass, DOMAIN, self.issue_id)
        elif self._timer is None:
            self._timer = async_call_later(
                self.hass, NO_SERVER_ISSUE_AFTER, self._async_raise
            )

    @callback
    def _async_raise(self, _now: datetime) -> None:
        self._timer = None
        ir.async_create_issue(
            self.hass,
            DOMAIN,
            self.issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="no_server",
            # The panel's Servers page shows each server's health and a Wake button.
            learn_more_url=f"/{PANEL_URL_PATH}/servers",
            translation_placeholders={
                "agent": self.subentry.title,
                "server": self.entry.title,
                "minutes": f"{NO_SERVER_ISSUE_AFTER / 60:g}",
            },
        )

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer()
            self._timer = None
