"""Every number box of every form refuses what no count or amount holds.

A number selector takes "nan" (no comparison with its bounds refuses it) and
a fraction whatever its step: each form says so with a form error, keeps
the entry's options as they were, and saves the corrected input.
"""

from typing import Any

from homeassistant import config_entries
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType, InvalidData
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_CONNECT_TIMEOUT,
    CONF_MAX_TOKENS,
    CONF_NIGHTLY,
    CONF_NIGHTLY_FALLBACK,
    CONF_NIGHTLY_TIME,
    CONF_QUIET_MINUTES,
    CONF_RETENTION_DAYS,
    CONF_TEMPERATURE,
    CONF_TOOL_ROUNDS,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
    SUBENTRY_AI_TASK,
)
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn

RECORD = {
    CONF_RETENTION_DAYS: 30,
    CONF_QUIET_MINUTES: 10,
    CONF_NIGHTLY: True,
    CONF_NIGHTLY_TIME: "03:00:00",
}
SERVER = {
    CONF_CONNECT_TIMEOUT: 2,
    CONF_WAKE_ADDRESS: "192.168.1.255",
    CONF_WAKE_PORT: 9,
    CONF_WAKE_WAIT: 20,
    CONF_NIGHTLY_FALLBACK: False,
}


async def open_page(hass: HomeAssistant, entry: MockConfigEntry, page: str) -> str:
    """Open a page of the entry's Configure menu; return the flow id."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": page}
    )
    assert result["type"] is FlowResultType.FORM
    return result["flow_id"]


@pytest.fixture
async def entry(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> MockConfigEntry:
    """The stand-in's entry, set up, with the record's options set."""
    hass.config_entries.async_update_entry(config_entry, options=dict(RECORD))
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    return config_entry


@pytest.mark.parametrize(
    ("page", "good", "field", "value", "error"),
    [
        ("record", RECORD, CONF_RETENTION_DAYS, "nan", "invalid_number"),
        ("record", RECORD, CONF_RETENTION_DAYS, "NaN", "invalid_number"),
        ("record", RECORD, CONF_QUIET_MINUTES, 2.5, "whole_number"),
        ("server", SERVER, CONF_WAKE_PORT, "nan", "invalid_number"),
        ("server", SERVER, CONF_WAKE_PORT, 9.5, "whole_number"),
        ("server", SERVER, CONF_CONNECT_TIMEOUT, "nan", "invalid_number"),
        ("server", SERVER, CONF_WAKE_WAIT, "nan", "invalid_number"),
    ],
)
async def test_the_entrys_pages_refuse_nan_and_fractions(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    page: str,
    good: dict[str, Any],
    field: str,
    value: Any,
    error: str,
) -> None:
    flow_id = await open_page(hass, entry, page)
    result = await hass.config_entries.options.async_configure(
        flow_id, good | {field: value}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {field: error}
    assert entry.options == RECORD

    result = await hass.config_entries.options.async_configure(flow_id, good)
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.options == RECORD | good
    assert entry.state is config_entries.ConfigEntryState.LOADED


@pytest.mark.parametrize("value", ["inf", "-inf", "1e999"])
async def test_infinity_is_refused_by_the_fields_bounds(
    hass: HomeAssistant, entry: MockConfigEntry, value: str
) -> None:
    flow_id = await open_page(hass, entry, "server")
    with pytest.raises(InvalidData):
        await hass.config_entries.options.async_configure(
            flow_id, SERVER | {CONF_WAKE_PORT: value}
        )
    assert entry.options == RECORD


@pytest.mark.parametrize(
    ("subentry_type", "field", "value", "error"),
    [
        ("conversation", CONF_TOOL_ROUNDS, "nan", "invalid_number"),
        ("conversation", CONF_TOOL_ROUNDS, 2.5, "whole_number"),
        ("conversation", CONF_TEMPERATURE, "nan", "invalid_number"),
        (SUBENTRY_AI_TASK, CONF_MAX_TOKENS, "nan", "invalid_number"),
    ],
)
async def test_an_agents_form_refuses_nan_and_fractions(
    hass: HomeAssistant,
    entry: MockConfigEntry,
    subentry_type: str,
    field: str,
    value: Any,
    error: str,
) -> None:
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, subentry_type), context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    options = {
        str(key): key.description["suggested_value"]
        for key in result["data_schema"].schema
        if key.description and "suggested_value" in key.description
    } | {"name": "Kitchen", CONF_MODEL: MODEL_ID}
    before = dict(entry.subentries)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], options | {field: value}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {field: error}
    assert dict(entry.subentries) == before

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], options
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    (kitchen,) = [s for s in entry.subentries.values() if s.title == "Kitchen"]
    assert kitchen.data[field] == options[field]
