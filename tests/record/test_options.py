"""The record's options: retention and quiet time per server, recording per agent."""

from homeassistant import config_entries
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_NIGHTLY,
    CONF_NIGHTLY_TIME,
    CONF_QUIET_MINUTES,
    CONF_RECORD,
    CONF_RETENTION_DAYS,
    DEFAULT_AGENT_OPTIONS,
    DEFAULT_NIGHTLY_TIME,
)
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn


async def test_options_flow_sets_retention_and_quiet_time(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    await hass.config_entries.async_setup(config_entry.entry_id)
    result = await hass.config_entries.options.async_init(config_entry.entry_id)
    assert result["type"] is FlowResultType.MENU
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": "record"}
    )
    assert (result["type"], result["step_id"]) == (FlowResultType.FORM, "record")
    defaults = {
        str(key): key.description["suggested_value"]
        for key in result["data_schema"].schema
    }
    # The same form sets memory's nightly pass.
    assert defaults == {
        CONF_RETENTION_DAYS: 90,
        CONF_QUIET_MINUTES: 30,
        CONF_NIGHTLY: True,
        CONF_NIGHTLY_TIME: DEFAULT_NIGHTLY_TIME,
    }
    options = {
        CONF_RETENTION_DAYS: 0,
        CONF_QUIET_MINUTES: 10,
        CONF_NIGHTLY: False,
        CONF_NIGHTLY_TIME: "04:15:00",
    }
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], options
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert config_entry.options == options
    assert config_entry.state is config_entries.ConfigEntryState.LOADED


async def test_an_agent_can_stop_keeping_a_record(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    await hass.config_entries.async_setup(config_entry.entry_id)
    result = await hass.config_entries.subentries.async_init(
        (config_entry.entry_id, "conversation"),
        context={"source": config_entries.SOURCE_USER},
    )
    assert CONF_RECORD in {str(key) for key in result["data_schema"].schema}
    options = DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_RECORD: False}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {"name": "Private", **options}
    )
    await hass.async_block_till_done()
    private = next(s for s in config_entry.subentries.values() if s.title == "Private")
    assert private.data[CONF_RECORD] is False
