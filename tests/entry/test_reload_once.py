"""Every change of an entry sets it up again exactly once.

Reconfigure, reauth, each page of the Configure menu and each subentry flow:
the entry's setups are counted as Home Assistant announces them.
"""

from typing import Any

from homeassistant import config_entries
from homeassistant.const import CONF_API_KEY, CONF_MODEL, CONF_NAME, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_CONNECT_TIMEOUT,
    CONF_MAX_TOKENS,
    CONF_NIGHTLY,
    CONF_NIGHTLY_FALLBACK,
    CONF_NIGHTLY_TIME,
    CONF_QUIET_MINUTES,
    CONF_REQUEST_TIMEOUT,
    CONF_RETENTION_DAYS,
    CONF_TEMPERATURE,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
    DEFAULT_AGENT_OPTIONS,
    SUBENTRY_AI_TASK,
)
from tests.harness.agent import API_KEY
from tests.harness.entry_setups import EntrySetups
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn, serve

LOADED = config_entries.ConfigEntryState.LOADED


async def loaded(hass: HomeAssistant, entry: MockConfigEntry) -> EntrySetups:
    """Set the entry up; count its setups from then on."""
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is LOADED
    return EntrySetups(hass, entry)


async def test_reconfigure_sets_the_entry_up_once(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    setups = await loaded(hass, config_entry)
    result = await config_entry.start_reconfigure_flow(hass)
    async with serve(LlamaServerStandIn(api_key="sk-new-key")) as moved:
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: moved.url, CONF_API_KEY: "sk-new-key"}
        )
        await hass.async_block_till_done()
        assert result["reason"] == "reconfigure_successful"
        assert config_entry.runtime_data.client.url == moved.url
    assert setups.count == 1
    assert config_entry.state is LOADED


async def test_reauth_of_a_loaded_entry_sets_it_up_once(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    setups = await loaded(hass, config_entry)
    llama_server.api_key = "sk-rotated"
    result = await config_entry.start_reauth_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "sk-rotated"}
    )
    await hass.async_block_till_done()
    assert result["reason"] == "reauth_successful"
    assert setups.count == 1
    assert config_entry.state is LOADED


@pytest.mark.parametrize(
    ("page", "options"),
    [
        (
            "record",
            {
                CONF_RETENTION_DAYS: 7,
                CONF_QUIET_MINUTES: 10,
                CONF_NIGHTLY: False,
                CONF_NIGHTLY_TIME: "04:15:00",
            },
        ),
        (
            "server",
            {
                CONF_CONNECT_TIMEOUT: 2,
                CONF_WAKE_ADDRESS: "192.168.1.255",
                CONF_WAKE_PORT: 9,
                CONF_WAKE_WAIT: 20,
                CONF_NIGHTLY_FALLBACK: False,
            },
        ),
    ],
)
async def test_each_options_page_sets_the_entry_up_once(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    page: str,
    options: dict[str, Any],
) -> None:
    setups = await loaded(hass, config_entry)
    result = await hass.config_entries.options.async_init(config_entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": page}
    )
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], options
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert config_entry.options == options
    assert setups.count == 1
    assert config_entry.state is LOADED


async def test_installing_the_examples_changes_nothing_and_reloads_nothing(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    setups = await loaded(hass, config_entry)
    result = await hass.config_entries.options.async_init(config_entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": "install_examples"}
    )
    await hass.async_block_till_done()
    assert result["reason"] == "examples_installed"
    assert setups.count == 0
    assert config_entry.state is LOADED


AGENT = DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID}
AI_TASK = {
    CONF_MODEL: MODEL_ID,
    CONF_TEMPERATURE: 0.1,
    CONF_MAX_TOKENS: 512,
    CONF_REQUEST_TIMEOUT: 30,
}


@pytest.mark.parametrize(
    ("subentry_type", "options"),
    [("conversation", AGENT), (SUBENTRY_AI_TASK, AI_TASK)],
)
async def test_each_subentry_flow_sets_the_entry_up_once(
    hass: HomeAssistant,
    config_entry: MockConfigEntry,
    subentry_type: str,
    options: dict[str, Any],
) -> None:
    setups = await loaded(hass, config_entry)
    result = await hass.config_entries.subentries.async_init(
        (config_entry.entry_id, subentry_type),
        context={"source": config_entries.SOURCE_USER},
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Kitchen", **options}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert setups.count == 1

    kitchen = next(s for s in config_entry.subentries.values() if s.title == "Kitchen")
    result = await config_entry.start_subentry_reconfigure_flow(
        hass, kitchen.subentry_id
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Kitchen", **options, CONF_MAX_TOKENS: 256}
    )
    await hass.async_block_till_done()
    assert result["reason"] == "reconfigure_successful"
    assert config_entry.subentries[kitchen.subentry_id].data[CONF_MAX_TOKENS] == 256
    assert setups.count == 2

    assert hass.config_entries.async_remove_subentry(config_entry, kitchen.subentry_id)
    await hass.async_block_till_done()
    assert setups.count == 3
    assert config_entry.state is LOADED


async def test_a_key_given_again_unchanged_reloads_nothing(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    setups = await loaded(hass, config_entry)
    result = await config_entry.start_reauth_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: API_KEY}
    )
    await hass.async_block_till_done()
    assert result["reason"] == "reauth_successful"
    assert setups.count == 0
