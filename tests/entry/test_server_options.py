"""The Server page of the entry's Configure menu, and an agent's fallback servers."""

from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_CONNECT_TIMEOUT,
    CONF_FALLBACK_SERVERS,
    CONF_MAX_TOKENS,
    CONF_NIGHTLY_FALLBACK,
    CONF_PREFER_OWN_SERVER,
    CONF_RETENTION_DAYS,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_MAC,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
)
from tests.harness.agent import speech
from tests.harness.agent_entry import async_ask
from tests.harness.failover import async_add_server
from tests.harness.llama_server import LlamaServerStandIn, serve, text_reply

GOOD = {
    CONF_CONNECT_TIMEOUT: 2,
    CONF_WAKE_MAC: "5c:60:ba:1e:22:7f",
    CONF_WAKE_ADDRESS: "192.168.1.255",
    CONF_WAKE_PORT: 9,
    CONF_WAKE_WAIT: 20,
    CONF_NIGHTLY_FALLBACK: False,
}


async def open_server_page(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Open the Configure menu and pick Server; return the flow id."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert result["type"] is FlowResultType.MENU
    assert "server" in result["menu_options"]
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], {"next_step_id": "server"}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "server"
    return result["flow_id"]


@pytest.mark.parametrize(
    ("hostile", "error"),
    [
        ({CONF_WAKE_MAC: "5c:60:ba:1e:22"}, {CONF_WAKE_MAC: "invalid_mac"}),
        ({CONF_WAKE_MAC: "--interface=eth0"}, {CONF_WAKE_MAC: "invalid_mac"}),
        ({CONF_WAKE_MAC: "5c:60-ba:1e:22:7f"}, {CONF_WAKE_MAC: "invalid_mac"}),
        (
            {CONF_WAKE_ADDRESS: "desktop.lan; reboot"},
            {CONF_WAKE_ADDRESS: "invalid_address"},
        ),
        ({CONF_WAKE_ADDRESS: ""}, {CONF_WAKE_ADDRESS: "invalid_address"}),
    ],
)
async def test_bad_input_is_refused_and_nothing_is_lost(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    hostile: dict[str, Any],
    error: dict[str, str],
) -> None:
    entry, _ = await async_add_server(
        hass, llama_server.url, "big", options={CONF_RETENTION_DAYS: 7}
    )
    flow_id = await open_server_page(hass, entry)
    result = await hass.config_entries.options.async_configure(flow_id, GOOD | hostile)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == error
    assert entry.options == {CONF_RETENTION_DAYS: 7}
    # The same form, corrected, is saved; the record's options are kept.
    result = await hass.config_entries.options.async_configure(flow_id, GOOD)
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert entry.options == {CONF_RETENTION_DAYS: 7} | GOOD
    # The entry reloaded with its waker.
    waker = entry.runtime_data.waker
    assert waker is not None
    assert (waker.mac, waker.address, waker.port, waker.wait) == (
        "5c:60:ba:1e:22:7f",
        "192.168.1.255",
        9,
        20,
    )
    assert entry.runtime_data.client.connect_timeout == 2


async def test_a_blank_mac_stops_waking(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    entry, _ = await async_add_server(hass, llama_server.url, "big", options=GOOD)
    assert entry.runtime_data.waker is not None
    flow_id = await open_server_page(hass, entry)
    result = await hass.config_entries.options.async_configure(
        flow_id, GOOD | {CONF_WAKE_MAC: "  "}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    assert CONF_WAKE_MAC not in entry.options
    assert entry.runtime_data.waker is None


async def test_the_agent_form_offers_the_other_servers_by_title(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    fallback, _ = await async_add_server(hass, llama_server.url, "small")
    hass.config_entries.async_update_entry(fallback, title="Always-on box")
    async with serve(LlamaServerStandIn()) as desktop:
        entry, _ = await async_add_server(
            hass, desktop.url, "big", fallbacks=[fallback]
        )
        (subentry_id,) = entry.subentries
        result = await entry.start_subentry_reconfigure_flow(hass, subentry_id)
    assert result["type"] is FlowResultType.FORM
    (field,) = [
        key for key in result["data_schema"].schema if key == CONF_FALLBACK_SERVERS
    ]
    selector = result["data_schema"].schema[field]
    assert selector.config["options"] == [
        {"label": "Always-on box", "value": fallback.entry_id}
    ]
    assert selector.config["multiple"] is True


async def test_an_agent_of_a_sleeping_server_can_get_its_fallbacks(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    async with serve(LlamaServerStandIn(model_id="small")) as box:
        fallback, _ = await async_add_server(hass, box.url, "small")
        entry, _ = await async_add_server(hass, llama_server.url, "big")
        await llama_server.stop()
        (subentry_id,) = entry.subentries
        result = await entry.start_subentry_reconfigure_flow(hass, subentry_id)
        assert result["type"] is FlowResultType.FORM
        options = dict(entry.subentries[subentry_id].data)
        result = await hass.config_entries.subentries.async_configure(
            result["flow_id"],
            options
            | {
                "name": "Desktop",
                CONF_MAX_TOKENS: 64,
                CONF_FALLBACK_SERVERS: [fallback.entry_id],
            },
        )
        await hass.async_block_till_done()
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "reconfigure_successful"
        assert entry.subentries[subentry_id].data[CONF_FALLBACK_SERVERS] == [
            fallback.entry_id
        ]


async def test_an_agent_can_prefer_its_own_server(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    entry, _ = await async_add_server(hass, llama_server.url, "big")
    (subentry_id,) = entry.subentries
    result = await entry.start_subentry_reconfigure_flow(hass, subentry_id)
    assert result["type"] is FlowResultType.FORM
    (field,) = [
        key for key in result["data_schema"].schema if key == CONF_PREFER_OWN_SERVER
    ]
    # Off unless asked for: a fallback that is up answers at once.
    assert field.description == {"suggested_value": False}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        dict(entry.subentries[subentry_id].data)
        | {"name": "Desktop", CONF_MAX_TOKENS: 64, CONF_PREFER_OWN_SERVER: True},
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.ABORT
    assert entry.subentries[subentry_id].data[CONF_PREFER_OWN_SERVER] is True


async def test_an_agent_whose_fallback_was_deleted_can_be_saved(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    async with serve(LlamaServerStandIn(model_id="small")) as box:
        fallback, _ = await async_add_server(hass, box.url, "small")
        entry, agent_id = await async_add_server(
            hass, llama_server.url, "big", fallbacks=[fallback]
        )
        assert (await hass.config_entries.async_remove(fallback.entry_id))[
            "require_restart"
        ] is False
    (subentry_id,) = entry.subentries
    result = await entry.start_subentry_reconfigure_flow(hass, subentry_id)
    assert result["type"] is FlowResultType.FORM
    suggested = {
        str(key): key.description["suggested_value"]
        for key in result["data_schema"].schema
        if key.description and "suggested_value" in key.description
    }
    assert suggested[CONF_FALLBACK_SERVERS] == []
    # What the form suggests is what it saves.
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], suggested | {"name": "Desktop", CONF_MAX_TOKENS: 64}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    assert entry.subentries[subentry_id].data[CONF_FALLBACK_SERVERS] == []
    assert entry.subentries[subentry_id].data[CONF_MAX_TOKENS] == 64
    llama_server.script = [text_reply("Still here.")]
    assert speech(await async_ask(hass, agent_id, "Hello?")) == "Still here."
