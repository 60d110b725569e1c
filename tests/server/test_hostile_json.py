"""A server's JSON is data: hostile JSON from a llama-server breaks nothing.

A lone surrogate, nesting deeper than orjson writes, numbers no JSON reader
holds and values of the wrong type, from `/v1/models`, `/props` and an
answer's timings, reach the panel's websocket answers, the entities' states
and Home Assistant's storage only as checked values.
"""

from collections.abc import AsyncIterator
from datetime import timedelta
import json
from typing import Any

from homeassistant import config_entries
from homeassistant.const import CONF_MODEL, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er, issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
    flush_store,
)

from custom_components.desktop_assistant.const import DOMAIN, HEALTH_INTERVAL
from tests.harness.agent import Agent, speech
from tests.harness.agent_entry import async_ask
from tests.harness.failover import async_add_server
from tests.harness.hostile_server import (
    LONE_SURROGATE,
    HostileLlamaServer,
    deeply_nested,
    hostile_final_chunk,
)
from tests.harness.llama_server import (
    LlamaServerStandIn,
    Reply,
    chunk,
    error_body,
    serve,
    sse,
    text_reply,
)
from tests.harness.memory_seed import Said, add_conversation

SURROGATE_MODEL = f"gemma{LONE_SURROGATE}-12b.gguf"
# What is kept of it: the surrogate as U+FFFD, which UTF-8 can write.
STORED_MODEL = "gemma\ufffd-12b.gguf"
AT = 1_795_000_000.0


@pytest.fixture
async def llama_server(socket_enabled: None) -> AsyncIterator[HostileLlamaServer]:
    """The stand-in, hostile where a test says so."""
    async with serve(HostileLlamaServer()) as stand_in:
        yield stand_in


async def websocket_result(client: Any, **message: Any) -> Any:
    await client.send_json_auto_id(message)
    answer = await client.receive_json()
    assert answer["success"], answer
    return answer["result"]


def sensor_of(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    entity_id = er.async_get(hass).async_get_entity_id(
        "binary_sensor", DOMAIN, f"{entry.entry_id}_server"
    )
    assert entity_id is not None
    return entity_id


async def test_every_server_is_listed_and_every_sensor_in_the_states(
    hass: HomeAssistant, llama_server: HostileLlamaServer, hass_ws_client: Any
) -> None:
    llama_server.model_id = SURROGATE_MODEL
    llama_server.props_body = {
        "total_slots": deeply_nested(),
        "default_generation_settings": {"n_ctx": deeply_nested()},
    }
    async with serve(LlamaServerStandIn()) as sound_server:
        sound, _ = await async_add_server(hass, sound_server.url, "sound")
        hostile, agent_id = await async_add_server(hass, llama_server.url, "hostile")
        events = [sse(chunk({"content": "Hi."})), sse(hostile_final_chunk())]
        llama_server.script = [Reply(events=[*events, sse("[DONE]")])]
        assert speech(await async_ask(hass, agent_id, "Hello")) == "Hi."
        client = await hass_ws_client(hass)

        listed = await websocket_result(client, type=f"{DOMAIN}/servers/list")
        states = await websocket_result(client, type="get_states")

    servers = {server["entry_id"]: server for server in listed["servers"]}
    assert servers[sound.entry_id]["slots"] == 1
    assert servers[hostile.entry_id]["model"] == STORED_MODEL
    assert servers[hostile.entry_id]["slots"] is None
    assert servers[hostile.entry_id]["context"] is None
    # Only the sound timing is kept.
    assert servers[hostile.entry_id]["timings"] == {
        "prompt_n": None,
        "cache_n": None,
        "predicted_per_second": 99.4,
    }
    by_id = {state["entity_id"]: state for state in states}
    assert by_id[sensor_of(hass, sound)]["state"] == "on"
    hostile_sensor = by_id[sensor_of(hass, hostile)]
    assert hostile_sensor["state"] == "on"
    assert hostile_sensor["attributes"]["model"] == STORED_MODEL


async def test_a_servers_error_with_a_surrogate_is_kept_in_the_nightly_run(
    hass: HomeAssistant,
    agent: Agent,
    llama_server: HostileLlamaServer,
    hass_ws_client: Any,
) -> None:
    await add_conversation(
        hass, "conv-1", [Said("user", "My sister Anouk lives in Leiden now.")], AT
    )
    message = f"model crashed {LONE_SURROGATE}"
    llama_server.reply_to = lambda _: Reply(
        status=500, body=error_body(500, message, "server_error")
    )
    result = await hass.services.async_call(
        DOMAIN, "run_nightly", {}, blocking=True, return_response=True
    )
    assert result is not None
    assert result["outcome"].startswith("failed")
    client = await hass_ws_client(hass)
    run = await websocket_result(
        client, type=f"{DOMAIN}/memory/runs/get", run_id=result["run_id"]
    )
    assert run["outcome"] == result["outcome"]
    assert "model crashed \ufffd" in run["detail"]["error"]


async def test_a_surrogate_model_id_is_stored_with_every_entry(
    hass: HomeAssistant,
    llama_server: HostileLlamaServer,
    hass_storage: dict[str, Any],
) -> None:
    other = MockConfigEntry(domain="other_integration", title="Other")
    other.add_to_hass(hass)
    llama_server.model_id = SURROGATE_MODEL
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama_server.url}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    (subentry,) = result["result"].subentries.values()
    assert subentry.data[CONF_MODEL] == STORED_MODEL

    await flush_store(hass.config_entries._store)
    stored = hass_storage["core.config_entries"]["data"]["entries"]
    assert {entry["domain"] for entry in stored} == {DOMAIN, "other_integration"}
    (ours,) = [entry for entry in stored if entry["domain"] == DOMAIN]
    (stored_subentry,) = ours["subentries"]
    assert stored_subentry["data"][CONF_MODEL] == STORED_MODEL


@pytest.mark.parametrize(
    "slots",
    [[1, 2], {"slots": 2}, deeply_nested(), 10**30],
    ids=["list", "object", "nested", "huge"],
)
async def test_the_nightly_pass_reads_any_total_slots(
    hass: HomeAssistant, agent: Agent, llama_server: HostileLlamaServer, slots: Any
) -> None:
    llama_server.props_body = {"total_slots": slots}
    await add_conversation(
        hass, "conv-1", [Said("user", "My sister Anouk lives in Leiden now.")], AT
    )
    llama_server.script = [text_reply(json.dumps({"notes": []}))]
    result = await hass.services.async_call(
        DOMAIN, "run_nightly", {}, blocking=True, return_response=True
    )
    assert result is not None
    assert result["outcome"] == "ok"
    (request,) = llama_server.chat_requests
    # An unknown slot count: llama-server chooses the slot.
    assert "id_slot" not in request


def caps(tools: Any, tool_calls: Any) -> dict[str, Any]:
    """A `/props` body whose `chat_template_caps` say these of tools."""
    return {
        "total_slots": 1,
        "chat_template_caps": {
            "supports_tools": tools,
            "supports_tool_calls": tool_calls,
        },
    }


async def listed_tool_calls(hass: HomeAssistant, hass_ws_client: Any) -> Any:
    client = await hass_ws_client(hass)
    (server,) = (await websocket_result(client, type=f"{DOMAIN}/servers/list"))[
        "servers"
    ]
    return server["tool_calls"]


def has_issue(hass: HomeAssistant, entry: MockConfigEntry) -> bool:
    issue_id = f"no_tool_calls_{entry.entry_id}"
    return ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None


@pytest.mark.parametrize(
    ("body", "tool_calls"),
    [
        ({"chat_template_caps": [True, True]}, None),
        ({"chat_template_caps": deeply_nested(leaf=False)}, None),
        (caps("yes", 1), None),
        (caps(deeply_nested(leaf=True), LONE_SURROGATE), None),
        (caps(True, {"deep": deeply_nested()}), True),
        (caps(10**30, False), False),
    ],
    ids=["list", "nested", "not-booleans", "nested-flag", "one-sound", "one-false"],
)
async def test_tool_calls_are_read_from_any_chat_template_caps(
    hass: HomeAssistant,
    llama_server: HostileLlamaServer,
    hass_ws_client: Any,
    body: Any,
    tool_calls: bool | None,
) -> None:
    llama_server.props_body = body
    entry, _ = await async_add_server(hass, llama_server.url, "hostile")
    assert await listed_tool_calls(hass, hass_ws_client) is tool_calls
    # Only a template said to drop the tools is an issue.
    assert has_issue(hass, entry) is (tool_calls is False)


async def test_each_health_check_reads_the_template_again(
    hass: HomeAssistant, llama_server: HostileLlamaServer, hass_ws_client: Any
) -> None:
    llama_server.props_body = caps(True, True)
    entry, _ = await async_add_server(hass, llama_server.url, "changing")
    assert not has_issue(hass, entry)
    checked = dt_util.utcnow()
    # Restarted between two checks with another template, then with none said.
    for body, tool_calls in ((caps(True, False), False), ({}, None)):
        llama_server.props_body = body
        checked += timedelta(seconds=HEALTH_INTERVAL + 1)
        async_fire_time_changed(hass, checked)
        await hass.async_block_till_done(wait_background_tasks=True)
        assert has_issue(hass, entry) is (tool_calls is False)
        assert await listed_tool_calls(hass, hass_ws_client) is tool_calls
