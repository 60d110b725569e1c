"""A Repairs issue for a server whose chat template cannot call tools.

llama-server drops the tools of a request without a word when its template
cannot render them. Where the agents asking it call tools constrained (their
*Tool calls* Automatic or Constrained) the issue says that, and what it
costs; otherwise that the tools are dropped. Either way it names the fixes.
"""

from homeassistant.config_entries import (
    SIGNAL_CONFIG_ENTRY_CHANGED,
    ConfigEntry,
    ConfigEntryChange,
)
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.dispatcher import async_dispatcher_connect

from ..const import DOMAIN, TOOL_CALLS_DOC_URL
from ..runtime import DesktopAssistantConfigEntry
from ..text import model_name
from .agents import constrained_agents


def issue_id(entry: DesktopAssistantConfigEntry) -> str:
    """The `no_tool_calls` issue of one llama-server entry."""
    return f"no_tool_calls_{entry.entry_id}"


@callback
def async_watch_tool_calls(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> CALLBACK_TYPE:
    """Keep the issue while the template cannot call tools; return what stops it.

    Looked at now, at every change of the entry's health, whose check
    reads `/props` each time, and at every change of an entry of the domain
    (another entry's agent may fall back to this server). Not reported (a
    proxy) is no issue; the issue goes when the template can call tools, or
    with the entry.
    """
    health = entry.runtime_data.health

    @callback
    def evaluate() -> None:
        if health.props is None or health.props.tool_calls is not False:
            ir.async_delete_issue(hass, DOMAIN, issue_id(entry))
            return
        agents = constrained_agents(hass, entry)
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id(entry),
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="constrained_tool_calls" if agents else "no_tool_calls",
            learn_more_url=TOOL_CALLS_DOC_URL,
            translation_placeholders={
                "server": entry.title,
                "model": model_name(health.model or "") or "-",
                "agents": ", ".join(agents),
            },
        )

    @callback
    def entry_changed(_change: ConfigEntryChange, changed: ConfigEntry) -> None:
        if changed.domain == DOMAIN and changed.entry_id != entry.entry_id:
            evaluate()

    stop_health = health.async_add_listener(evaluate)
    stop_entries = async_dispatcher_connect(
        hass, SIGNAL_CONFIG_ENTRY_CHANGED, entry_changed
    )
    evaluate()

    @callback
    def stop() -> None:
        stop_health()
        stop_entries()
        ir.async_delete_issue(hass, DOMAIN, issue_id(entry))

    return stop
