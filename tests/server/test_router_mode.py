"""llama-server's router mode (`--models-dir`): one URL, several models, as a fallback.

The packaged llama-server runs in router mode over a folder of two tiny
models, loading each when it is first asked for.
"""

from collections.abc import Iterator

import aiohttp
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from tests.harness.agent import speech
from tests.harness.agent_entry import async_ask
from tests.harness.failover import answered_by, async_add_server
from tests.harness.ports import closed_port_url
from tests.harness.real_engines import RealLlamaServer, start_llama_server


@pytest.fixture(scope="module")
def router_process(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealLlamaServer]:
    """llama-server in router mode over the models `small` and `big`."""
    with start_llama_server(
        tmp_path_factory.mktemp("router"), router=("small", "big")
    ) as server:
        yield server


async def loaded_models(url: str) -> set[str]:
    """The models the router has loaded, from its GET /v1/models."""
    async with aiohttp.ClientSession() as session, session.get(f"{url}/models") as got:
        body = await got.json()
    return {m["id"] for m in body["data"] if m["status"]["value"] == "loaded"}


async def test_a_router_fallback_answers_with_the_model_its_agents_use(
    hass: HomeAssistant, socket_enabled: None, router_process: RealLlamaServer
) -> None:
    router, _ = await async_add_server(hass, router_process.url, "small")
    assert router.runtime_data.health.reachable is True
    # The desktop is off; the box's router answers with the small model.
    _, agent_id = await async_add_server(
        hass, closed_port_url("/v1"), "Qwen3-32B", fallbacks=[router]
    )
    result = await async_ask(hass, agent_id, "Hello")
    assert not speech(result).startswith("Sorry")
    assert answered_by() == {"server": router.title, "model": "small"}
    assert await loaded_models(router_process.url) == {"small"}

    # A second agent of the router entry asks for the big model: loaded too.
    hass.config_entries.async_add_subentry(
        router,
        ConfigSubentry(
            subentry_type="conversation",
            title="big",
            data=DEFAULT_AGENT_OPTIONS
            | {CONF_MODEL: "big", CONF_LLM_HASS_API: [], CONF_MAX_TOKENS: 8},
            unique_id=None,
        ),
    )
    await hass.async_block_till_done()
    (big_id,) = [s.subentry_id for s in router.subentries.values() if s.title == "big"]
    big_agent = er.async_get(hass).async_get_entity_id("conversation", DOMAIN, big_id)
    assert big_agent is not None
    result = await async_ask(hass, big_agent, "Hello")
    assert not speech(result).startswith("Sorry")
    assert answered_by() == {"server": router.title, "model": "big"}
    assert await loaded_models(router_process.url) == {"small", "big"}
