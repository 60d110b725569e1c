"""Setting up, unloading and diagnosing an entry."""

import json

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.agent import API_KEY
from tests.harness.llama_server import LlamaServerStandIn
from tests.harness.ports import closed_port_url


async def test_setup_and_unload(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.LOADED
    assert config_entry.runtime_data.client.url == llama_server.url
    assert llama_server.requests[-1].headers["Authorization"] == f"Bearer {API_KEY}"

    assert await hass.config_entries.async_unload(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.state is ConfigEntryState.NOT_LOADED


async def test_setup_while_the_server_is_down_loads_with_the_sensor_off(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    # Credentials in the URL must not reach the sensor's error or the log.
    url = closed_port_url("/v1").replace("://", "://household:hunter2@")
    entry = MockConfigEntry(domain=DOMAIN, data={CONF_URL: url})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.LOADED
    health = entry.runtime_data.health
    assert health.reachable is False
    assert health.last_error and "hunter2" not in health.last_error
    sensor_id = er.async_get(hass).async_get_entity_id(
        "binary_sensor", DOMAIN, f"{entry.entry_id}_server"
    )
    assert sensor_id is not None
    state = hass.states.get(sensor_id)
    assert state is not None
    assert state.state == "off"
    assert "hunter2" not in str(state.attributes)


async def test_setup_fails_for_a_server_that_is_not_openai_compatible(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    llama_server.models_override = (200, "<html></html>", "text/html")
    await hass.config_entries.async_setup(config_entry.entry_id)
    assert config_entry.state is ConfigEntryState.SETUP_ERROR
    assert "not an OpenAI-compatible server" in config_entry.reason


async def test_diagnostics_redact_the_api_key(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    config_entry: MockConfigEntry,
    llama_server: LlamaServerStandIn,
) -> None:
    assert await async_setup_component(hass, "diagnostics", {})
    await hass.config_entries.async_setup(config_entry.entry_id)
    diagnostics = await get_diagnostics_for_config_entry(
        hass, hass_client, config_entry
    )
    assert diagnostics["entry"]["data"] == {
        "url": llama_server.url,
        "api_key": "**REDACTED**",
    }
    (subentry,) = diagnostics["entry"]["subentries"]
    assert subentry["subentry_type"] == "conversation"
    assert API_KEY not in json.dumps(diagnostics)
