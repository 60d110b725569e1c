"""The Server page of an entry's options, and an agent's choice of fallbacks."""

from collections.abc import Mapping
import ipaddress
import logging
import math
import re
from typing import Any

from homeassistant.config_entries import ConfigEntry, ConfigFlowResult, OptionsFlow
from homeassistant.core import HomeAssistant
from homeassistant.helpers.selector import (
    BooleanSelector,
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    TextSelector,
)
import probatio as vol

from ..const import (
    CONF_CONNECT_TIMEOUT,
    CONF_NIGHTLY_FALLBACK,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_MAC,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_NIGHTLY_FALLBACK,
    DEFAULT_WAKE_ADDRESS,
    DEFAULT_WAKE_PORT,
    DEFAULT_WAKE_WAIT,
    DOMAIN,
)
from ..runtime import DesktopAssistantConfigEntry
from .client import CannotConnect, LlamaServerError
from .credentials import without_credentials

_LOGGER = logging.getLogger(__name__)


def number_box(
    minimum: float, maximum: float, step: float = 1, unit: str | None = None
) -> NumberSelector:
    """A number typed into a box (not a slider), with its unit when it has one.

    Every number of the entry's and the agents' forms is one of these.
    """
    config = NumberSelectorConfig(
        min=minimum, max=maximum, step=step, mode=NumberSelectorMode.BOX
    )
    if unit is not None:
        config["unit_of_measurement"] = unit
    return NumberSelector(config)


def checked_numbers(
    schema: vol.Schema, user_input: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The form's input with its number boxes checked, or the form's errors.

    Home Assistant's number selector lets "nan" through (no comparison with
    a bound is true of it) and ignores its step. Every box refuses NaN here;
    a box with a whole step refuses a fraction and keeps an int.
    """
    checked = dict(user_input)
    errors: dict[str, str] = {}
    for marker, selector in schema.schema.items():
        key = str(marker)
        if not isinstance(selector, NumberSelector) or key not in user_input:
            continue
        value = float(user_input[key])
        if not math.isfinite(value):
            errors[key] = "invalid_number"
        elif float(selector.config.get("step", 1)).is_integer():
            if value.is_integer():
                checked[key] = int(value)
            else:
                errors[key] = "whole_number"
    return checked, errors


SERVER_OPTIONS_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_CONNECT_TIMEOUT): number_box(0.5, 60, 0.5, "s"),
        vol.Optional(CONF_WAKE_MAC): TextSelector(),
        vol.Required(CONF_WAKE_ADDRESS): TextSelector(),
        vol.Required(CONF_WAKE_PORT): number_box(1, 65535),
        vol.Required(CONF_WAKE_WAIT): number_box(0, 600, 1, "s"),
        vol.Required(CONF_NIGHTLY_FALLBACK): BooleanSelector(),
    }
)
SERVER_OPTIONS_DEFAULTS: dict[str, Any] = {
    CONF_CONNECT_TIMEOUT: DEFAULT_CONNECT_TIMEOUT,
    CONF_WAKE_ADDRESS: DEFAULT_WAKE_ADDRESS,
    CONF_WAKE_PORT: DEFAULT_WAKE_PORT,
    CONF_WAKE_WAIT: DEFAULT_WAKE_WAIT,
    CONF_NIGHTLY_FALLBACK: DEFAULT_NIGHTLY_FALLBACK,
}
# A MAC address: six bytes in hex, separated by colons or dashes, or not.
MAC_ADDRESS = re.compile(r"[0-9a-f]{2}([:-]?)(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}", re.I)


def server_options(
    options: Mapping[str, Any], user_input: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The entry's options with the Server page's input, or the form's errors.

    The other pages' options are kept; a MAC left blank removes it.
    """
    mac = (user_input.get(CONF_WAKE_MAC) or "").strip()
    address = str(user_input[CONF_WAKE_ADDRESS]).strip()
    if mac and not MAC_ADDRESS.fullmatch(mac):
        return {}, {CONF_WAKE_MAC: "invalid_mac"}
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return {}, {CONF_WAKE_ADDRESS: "invalid_address"}
    merged = {key: value for key, value in options.items() if key != CONF_WAKE_MAC} | {
        key: value for key, value in user_input.items() if key != CONF_WAKE_MAC
    }
    merged[CONF_WAKE_ADDRESS] = address
    if mac:
        merged[CONF_WAKE_MAC] = mac
    return merged, {}


async def async_models_for_form(entry: DesktopAssistantConfigEntry) -> list[str] | str:
    """The server's models for an agent's form, or the reason to abort it.

    A server that is asleep lists the model it served last, so that an
    agent's options (its fallbacks, say) can be changed while it sleeps.
    """
    client = entry.runtime_data.client
    try:
        return await client.async_list_models()
    except CannotConnect:
        return [model] if (model := entry.runtime_data.health.model) else []
    except LlamaServerError as err:
        _LOGGER.debug(
            "Listing models failed: %s", without_credentials(f"{client.url}: {err!r}")
        )
        return "cannot_connect"
    except Exception:
        _LOGGER.exception(
            "Unexpected error listing models of %s", without_credentials(client.url)
        )
        return "unknown"


def other_servers(hass: HomeAssistant, entry: ConfigEntry) -> list[ConfigEntry]:
    """The llama-server entries an agent of `entry` can fall back to."""
    return [
        other
        for other in hass.config_entries.async_entries(DOMAIN)
        if other.entry_id != entry.entry_id
    ]


def fallback_selector(hass: HomeAssistant, entry: ConfigEntry) -> SelectSelector:
    """The other llama-server entries, by title, in the order chosen."""
    return SelectSelector(
        SelectSelectorConfig(
            options=[
                SelectOptionDict(label=other.title, value=other.entry_id)
                for other in other_servers(hass, entry)
            ],
            multiple=True,
        )
    )


def existing_fallbacks(
    hass: HomeAssistant, entry: ConfigEntry, entry_ids: list[str]
) -> list[str]:
    """The fallbacks among `entry_ids` that are still entries: a deleted one is dropped.

    The form refuses a value its selector does not offer.
    """
    offered = {other.entry_id for other in other_servers(hass, entry)}
    return [entry_id for entry_id in entry_ids if entry_id in offered]


class ServerOptionsStep(OptionsFlow):
    """The Server page of the entry's Configure menu."""

    async def async_step_server(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """When a question goes to a fallback, and how the server's machine is woken."""
        errors: dict[str, str] = {}
        if user_input is not None:
            user_input, errors = checked_numbers(SERVER_OPTIONS_SCHEMA, user_input)
            if not errors:
                options, errors = server_options(self.config_entry.options, user_input)
            if not errors:
                return self.async_create_entry(data=options)
        return self.async_show_form(
            step_id="server",
            data_schema=self.add_suggested_values_to_schema(
                SERVER_OPTIONS_SCHEMA,
                SERVER_OPTIONS_DEFAULTS
                | dict(self.config_entry.options)
                | (user_input or {}),
            ),
            errors=errors,
        )
