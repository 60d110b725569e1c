"""The health check of a server, what it feeds (sensor, Repairs), and background work."""

import asyncio
from datetime import timedelta
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant.const import (
    CONF_NIGHTLY_FALLBACK,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_MAC,
    CONF_WAKE_PORT,
    DOMAIN,
    SERVICE_RUN_NIGHTLY,
)
from custom_components.desktop_assistant.server.background import (
    async_server_for_background,
)
from tests.harness.agent_entry import async_ask
from tests.harness.failover import (
    async_add_server,
    async_wait_for_health,
    connectivity,
)
from tests.harness.fixed_time import AT_FIXED_NOON, FIXED_NOON
from tests.harness.llama_server import LlamaServerStandIn, text_reply
from tests.harness.ports import closed_port_url
from tests.harness.wake_on_lan import asleep_until_woken


async def test_health_follows_loading_and_keeps_what_the_panel_shows(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.health_status = 503
    entry, agent_id = await async_add_server(hass, llama_server.url, "big")
    health = entry.runtime_data.health
    assert health.reachable is False
    assert health.last_error == "HTTP 503: the model is loading"
    assert connectivity(hass, entry) == "off"
    changes: list[bool | None] = []
    unsubscribe = health.async_add_listener(lambda: changes.append(health.reachable))

    llama_server.health_status = 200
    llama_server.total_slots = 4
    await async_wait_for_health(hass, health, True)
    assert changes[-1] is True
    assert connectivity(hass, entry) == "on"
    assert health.model == llama_server.model_id
    assert health.props is not None
    assert health.props.total_slots == 4
    assert health.since is not None
    assert health.last_error is None

    llama_server.script = [text_reply("Hi.")]
    await async_ask(hass, agent_id, "Hello")
    assert health.last_timings == {
        "prompt_n": 42,
        "cache_n": 0,
        "predicted_per_second": 99.4,
    }
    unsubscribe()


async def test_a_proxy_whose_server_sleeps_at_start_is_down_not_broken(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    # nginx in front of a machine that is asleep answers 502 to everything.
    llama_server.health_status = 502
    llama_server.models_override = (502, "<html>502 Bad Gateway</html>", "text/html")
    entry, _ = await async_add_server(hass, llama_server.url, "big")
    assert entry.state is ConfigEntryState.LOADED
    health = entry.runtime_data.health
    assert health.reachable is False
    assert health.last_error == "HTTP 502: a proxy could not reach the server"


async def test_checks_asked_for_at_once_are_one_check(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.health_status = 503
    entry, _ = await async_add_server(hass, llama_server.url, "big")
    health = entry.runtime_data.health
    before = health_checks(llama_server)
    # The nightly pass and the timer's check, say: one probe, one next check.
    first, second = await asyncio.gather(health.async_check(), health.async_check())
    assert health_checks(llama_server) == before + 1
    assert first is second
    assert health.reachable is False


def health_checks(server: LlamaServerStandIn) -> int:
    return sum(request.path == "/health" for request in server.requests)


async def test_a_server_that_is_not_llama_server_is_checked_by_its_model_list(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    # LiteLLM or llama-swap behind one URL: /health is not llama-server's.
    llama_server.health_status = 404
    entry, _ = await async_add_server(hass, llama_server.url, "big")
    assert entry.runtime_data.health.reachable is True
    assert entry.runtime_data.health.model == llama_server.model_id


@AT_FIXED_NOON
async def test_no_server_for_ten_minutes_raises_an_issue_until_one_answers(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, freezer: Any
) -> None:
    assert dt_util.now() == FIXED_NOON  # ten minutes on fire no scheduled job
    port = llama_server.port
    await llama_server.stop()
    entry, _ = await async_add_server(hass, llama_server.url, "big")
    (subentry_id,) = entry.subentries
    issue_id = f"no_server_{subentry_id}"
    issues = ir.async_get(hass)

    freezer.tick(timedelta(minutes=9))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    assert issues.async_get_issue(DOMAIN, issue_id) is None

    freezer.tick(timedelta(minutes=1, seconds=1))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()
    issue = issues.async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    assert issue.translation_key == "no_server"
    assert issue.translation_placeholders["agent"] == "big"
    # Its card links to the panel's Servers page.
    assert issue.learn_more_url == "/desktop-assistant/servers"

    await llama_server.start(port)
    await async_wait_for_health(hass, entry.runtime_data.health, True, pause=0)
    assert issues.async_get_issue(DOMAIN, issue_id) is None


async def test_background_work_prefers_its_own_server(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    fallback, _ = await async_add_server(hass, llama_server.url, "small")
    entry, _ = await async_add_server(
        hass, closed_port_url("/v1"), "big", fallbacks=[fallback]
    )
    # Its own server is asleep and cannot be woken: the fallback, with the
    # model its agents use.
    client, model = await async_server_for_background(hass, entry)
    assert client is fallback.runtime_data.client
    assert model == "small"
    # Own server up: it, with the work's own choice of model.
    assert await async_server_for_background(hass, fallback) == (
        fallback.runtime_data.client,
        None,
    )
    hass.config_entries.async_update_entry(
        entry, options={CONF_NIGHTLY_FALLBACK: False}
    )
    await hass.async_block_till_done()
    assert await async_server_for_background(hass, entry) is None


async def test_background_work_wakes_its_server_and_waits(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    async with asleep_until_woken(llama_server) as receiver:
        entry, _ = await async_add_server(
            hass,
            llama_server.url,
            "big",
            options={
                CONF_WAKE_MAC: "5C-60-BA-1E-22-7F",
                CONF_WAKE_ADDRESS: "127.0.0.1",
                CONF_WAKE_PORT: receiver.port,
            },
        )
        assert entry.runtime_data.health.reachable is False
        server = await async_server_for_background(hass, entry, wake_wait=30)
        assert server == (entry.runtime_data.client, None)
        assert len(receiver.packets) == 1


async def test_nightly_pass_without_a_server_is_recorded_as_such(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    entry, _ = await async_add_server(
        hass, closed_port_url("/v1"), "big", options={CONF_NIGHTLY_FALLBACK: False}
    )
    assert entry.runtime_data.health.reachable is False
    response = await hass.services.async_call(
        DOMAIN, SERVICE_RUN_NIGHTLY, {}, blocking=True, return_response=True
    )
    assert response["outcome"] == "no_server"
