"""Constrained tool calls with the real SmolLM2-135M-Instruct, whose template cannot call tools.

llama-server's grammar holds the model to the reply schema: a tool call that
runs, then an answer streamed as text. Skips without the model (see
test_real_smollm2.py).
"""

from collections.abc import AsyncIterator
from typing import Any

from homeassistant.components.conversation import trace
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
import probatio as vol
import pytest

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    DEFAULT_AGENT_OPTIONS,
    TOOL_CALLS_AUTO,
)
from tests.harness.agent import speech
from tests.harness.agent_entry import (
    RecordingTool,
    ToolsAPI,
    async_add_agent,
    async_ask,
)
from tests.harness.real_engines import REAL_MODEL_TIMEOUT, RealLlamaServer

pytestmark = REAL_MODEL_TIMEOUT
API = "weather_tools"


@pytest.fixture
async def weather_agent(
    hass: HomeAssistant, socket_enabled: None, smollm2_server: RealLlamaServer
) -> AsyncIterator[tuple[str, RecordingTool]]:
    """An agent on SmolLM2 offered one weather tool, tool calls left to `auto`."""
    weather = RecordingTool(
        "get_weather",
        {vol.Required("city"): str},
        "Paris: light rain, 12 degrees Celsius",
    )
    weather.description = "Get the current weather in a city"
    unregister = llm.async_register_api(
        hass, ToolsAPI(hass=hass, id=API, name="Weather", tools=[weather])
    )
    entry, entity_id = await async_add_agent(
        hass,
        smollm2_server.url,
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: str(smollm2_server.model_path),
            CONF_LLM_HASS_API: [API],
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: 64,
            CONF_TOOL_CALLS: TOOL_CALLS_AUTO,
        },
    )
    yield entity_id, weather
    await hass.config_entries.async_unload(entry.entry_id)
    unregister()


def last_timings() -> list[dict[str, Any]]:
    """llama-server's timings of each round of the last turn, from its trace."""
    events = trace.async_get_traces()[-1].as_dict()["events"]
    return next(e["data"]["timings"] for e in events if "timings" in e["data"])


async def test_smollm2_calls_the_tool_then_streams_the_answer(
    hass: HomeAssistant, weather_agent: tuple[str, RecordingTool]
) -> None:
    entity_id, weather = weather_agent
    deltas: list[dict[str, Any]] = []
    result = await async_ask(
        hass,
        entity_id,
        "What is the weather in Paris?",
        None,
        lambda _log, delta: deltas.append(delta),
    )

    assert weather.calls[0] == {"city": "Paris"}
    answer = speech(result)
    pieces = [delta["content"] for delta in deltas if delta.get("content")]
    assert len(pieces) > 1
    assert "".join(pieces) == answer
    # Text, never the reply's JSON.
    assert answer.strip()
    assert '"answer"' not in answer
    assert not answer.lstrip().startswith("{")

    await async_ask(hass, entity_id, "What is the weather in Paris tomorrow?")
    (first_round, *_) = last_timings()
    # The system prompt with the tools is the cached prefix of a new
    # question: only the question and its clock line are read anew.
    prompt = first_round["cache_n"] + first_round["prompt_n"]
    assert first_round["prompt_n"] <= 0.3 * prompt, first_round
