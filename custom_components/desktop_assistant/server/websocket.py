"""Websocket commands (admin only) of the panel's Servers page.

Each llama-server entry: reachable or not and since when, the model, its
slots, context size, whether its template can call tools (from `/props`;
null when not reported) and which agents would hold their calls to a JSON
schema there, whether its model sees images, the last question's timings,
which agents ask it first and which fall back to it; *Wake* where a MAC is
set.
Health is read from the entry's runtime data (`ServerRuntime.health`),
never probed here. Errors: `not_found` (no such entry), `unavailable` (the
entry cannot be woken: no MAC set).
"""

from datetime import datetime
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.config_entries import ConfigEntry, ConfigEntryState
from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er
import probatio as vol

from ..const import CONF_WAKE_MAC, DOMAIN, SERVICE_WAKE_SERVER
from ..websocket_commands import ERR_UNAVAILABLE, Refused, admin_command
from .agents import constrained_agents, server_agents
from .credentials import without_credentials
from .reported import ServerProps

PREFIX: Final = f"{DOMAIN}/servers"
TIMINGS: Final = ("prompt_n", "cache_n", "predicted_per_second")


def agents_of(hass: HomeAssistant, entry: ConfigEntry) -> list[dict[str, Any]]:
    """The agents asking this server first, then those falling back to it."""
    registry = er.async_get(hass)
    found = [
        {
            "name": subentry.title,
            "entity_id": registry.async_get_entity_id(
                "conversation", DOMAIN, subentry.subentry_id
            ),
            "role": role,
        }
        for subentry, role in server_agents(hass, entry)
    ]
    return sorted(found, key=lambda agent: (agent["role"] != "first", agent["name"]))


def stamp(moment: datetime | None) -> str | None:
    """A moment as ISO text."""
    return moment.isoformat() if moment else None


def server_state(entry: ConfigEntry) -> dict[str, Any]:
    """What the entry's health says; before it loads, only what its state says."""
    health = getattr(getattr(entry, "runtime_data", None), "health", None)
    if health is None:
        reachable = {ConfigEntryState.LOADED: True, ConfigEntryState.SETUP_RETRY: False}
        return {
            "reachable": reachable.get(entry.state),
            "since": None,
            "model": None,
            "slots": None,
            "context": None,
            "tool_calls": None,
            "vision": None,
            "timings": None,
            "error": None,
        }
    props = health.props or ServerProps()
    timings = health.last_timings or {}
    return {
        "reachable": health.reachable,
        "since": stamp(health.since),
        "model": health.model,
        "slots": props.total_slots,
        "context": props.context,
        "tool_calls": props.tool_calls,
        "vision": props.vision,
        "timings": {key: timings.get(key) for key in TIMINGS} if timings else None,
        "error": without_credentials(str(health.last_error))
        if health.last_error
        else None,
    }


def server(hass: HomeAssistant, entry: ConfigEntry) -> dict[str, Any]:
    """One llama-server entry as the page shows it."""
    return {
        "entry_id": entry.entry_id,
        "title": entry.title,
        "url": without_credentials(entry.data.get(CONF_URL, "")),
        "state": entry.state.value,
        "can_wake": bool(entry.options.get(CONF_WAKE_MAC)),
        "agents": agents_of(hass, entry),
        # Agents whose calls are held to a JSON schema where the template
        # cannot call tools; the page says so, and what it costs.
        "constrained_agents": constrained_agents(hass, entry),
    } | server_state(entry)


@admin_command({vol.Required("type"): f"{PREFIX}/list"})
def websocket_list_servers(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Every llama-server entry with its health."""
    return {
        "servers": [
            server(hass, entry) for entry in hass.config_entries.async_entries(DOMAIN)
        ]
    }


@admin_command({vol.Required("type"): f"{PREFIX}/wake", vol.Required("entry_id"): str})
async def websocket_wake_server(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Send the entry's machine its magic packet, through the wake_server action."""
    entry = hass.config_entries.async_get_entry(msg["entry_id"])
    if entry is None or entry.domain != DOMAIN:
        raise Refused(websocket_api.ERR_NOT_FOUND, "No such server")
    if not entry.options.get(CONF_WAKE_MAC) or not hass.services.has_service(
        DOMAIN, SERVICE_WAKE_SERVER
    ):
        raise Refused(ERR_UNAVAILABLE, "No MAC address is set")
    try:
        await hass.services.async_call(
            DOMAIN,
            SERVICE_WAKE_SERVER,
            {"config_entry_id": entry.entry_id},
            blocking=True,
            context=connection.context(msg),
        )
    except HomeAssistantError as err:
        raise Refused(ERR_UNAVAILABLE, str(err)) from err
    return {}


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the Servers page's commands."""
    websocket_api.async_register_command(hass, websocket_list_servers)
    websocket_api.async_register_command(hass, websocket_wake_server)
