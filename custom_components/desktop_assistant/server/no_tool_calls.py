"""A Repairs issue for a server whose chat template cannot call tools.

llama-server drops the tools of a request without a word when its template
cannot render them; the issue says so, and names the fixes.
"""

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from ..const import DOMAIN, TOOL_CALLS_DOC_URL
from ..runtime import DesktopAssistantConfigEntry
from ..text import model_name


def issue_id(entry: DesktopAssistantConfigEntry) -> str:
    """The `no_tool_calls` issue of one llama-server entry."""
    return f"no_tool_calls_{entry.entry_id}"


@callback
def async_watch_tool_calls(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> CALLBACK_TYPE:
    """Keep the issue while the template cannot call tools; return what stops it.

    Looked at now and at every change of the entry's health, whose check
    reads `/props` each time. Not reported (a proxy) is no issue; the issue
    goes when the template can call tools, or with the entry.
    """
    health = entry.runtime_data.health

    @callback
    def evaluate() -> None:
        if health.props is None or health.props.tool_calls is not False:
            ir.async_delete_issue(hass, DOMAIN, issue_id(entry))
            return
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id(entry),
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="no_tool_calls",
            learn_more_url=TOOL_CALLS_DOC_URL,
            translation_placeholders={
                "server": entry.title,
                "model": model_name(health.model or "") or "-",
            },
        )

    stop_listening = health.async_add_listener(evaluate)
    evaluate()

    @callback
    def stop() -> None:
        stop_listening()
        ir.async_delete_issue(hass, DOMAIN, issue_id(entry))

    return stop
