"""Which agents ask a llama-server entry: its own first, others as a fallback.

And how those agents call tools there: where the server's template cannot
call tools, an agent whose *Tool calls* is Automatic or Constrained holds
its replies to a JSON schema of the tools (constrained calls), and one set
to Native sends tools the server drops.
"""

from collections.abc import Iterator

from homeassistant.config_entries import ConfigEntry, ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant

from ..const import CONF_FALLBACK_SERVERS, CONF_TOOL_CALLS, DOMAIN, TOOL_CALLS_NATIVE


def server_agents(
    hass: HomeAssistant, entry: ConfigEntry
) -> Iterator[tuple[ConfigSubentry, str]]:
    """Each conversation agent that asks the entry's server, with its role.

    The role is "first" for the entry's own agents and "fallback" for
    another entry's agents that fall back to it.
    """
    for other in hass.config_entries.async_entries(DOMAIN):
        for subentry in other.subentries.values():
            if subentry.subentry_type != "conversation":
                continue
            if other.entry_id == entry.entry_id:
                yield subentry, "first"
            elif entry.entry_id in (subentry.data.get(CONF_FALLBACK_SERVERS) or []):
                yield subentry, "fallback"


def constrained_agents(hass: HomeAssistant, entry: ConfigEntry) -> list[str]:
    """The names of the agents with tools whose calls here would be constrained.

    That is, with the server's template unable to call tools: every agent
    with an LLM API whose *Tool calls* is not Native.
    """
    return sorted(
        subentry.title
        for subentry, _role in server_agents(hass, entry)
        if subentry.data.get(CONF_LLM_HASS_API)
        and subentry.data.get(CONF_TOOL_CALLS) != TOOL_CALLS_NATIVE
    )
