"""Constrained tool calls with the real SmolLM2-135M-Instruct, whose template cannot call tools.

llama-server's grammar holds the model to the reply schema: a tool call that
runs, then an answer streamed as text. Skips without the model (see
test_real_smollm2.py).
"""

from collections.abc import AsyncIterator
from pathlib import Path
import re
from typing import Any

from homeassistant.components.conversation import trace
from homeassistant.components.intent.const import TIMER_DATA
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent, llm
import probatio as vol
import pytest

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
    TOOL_CALLS_AUTO,
)
from tests.harness.agent import speech
from tests.harness.agent_entry import (
    RecordingTool,
    ToolsAPI,
    async_add_agent,
    async_ask,
)
from tests.harness.assist_tools import SATELLITE, async_set_up_assist
from tests.harness.home_assistant import Answer, converse
from tests.harness.real_engines import REAL_MODEL_TIMEOUT, RealLlamaServer
from tests.harness.tool_files import write_tool_files

pytestmark = REAL_MODEL_TIMEOUT
API = "weather_tools"


def smollm2_options(
    server: RealLlamaServer, api: str, max_tokens: int = 64
) -> dict[str, Any]:
    """The agent's options on SmolLM2: the API's tools, steady answers, calls left to `auto`."""
    return DEFAULT_AGENT_OPTIONS | {
        CONF_MODEL: str(server.model_path),
        CONF_LLM_HASS_API: [api],
        CONF_TEMPERATURE: 0.0,
        CONF_MAX_TOKENS: max_tokens,
        CONF_TOOL_CALLS: TOOL_CALLS_AUTO,
    }


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
        smollm2_options(smollm2_server, API),
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


EXAMPLES = (
    Path(__file__).parents[2] / "custom_components" / DOMAIN / "examples" / "tools"
)
# The example weather tool file, its examples in six languages, answering
# from `echo` instead of OpenWeatherMap.
WEATHER_TOOL = re.sub(
    r"command = \[.*\]",
    'command = ["echo", "{place}", "{when}", "light rain, 12 degrees Celsius"]',
    (EXAMPLES / "weather.toml").read_text(encoding="utf-8"),
)


@pytest.fixture
async def household_agent(
    hass: HomeAssistant, socket_enabled: None, smollm2_server: RealLlamaServer
) -> AsyncIterator[str]:
    """An agent on SmolLM2 with the Assist API: the weather tool file, HA's intents, timers."""
    await hass.async_add_executor_job(
        write_tool_files, Path(hass.config.path(DOMAIN)), {"weather": WEATHER_TOOL}
    )
    await async_set_up_assist(hass)
    entry, entity_id = await async_add_agent(
        hass,
        smollm2_server.url,
        # Room for a call's arguments and a sentence in any language.
        smollm2_options(smollm2_server, llm.LLM_API_ASSIST, max_tokens=128),
    )
    yield entity_id
    await hass.config_entries.async_unload(entry.entry_id)


def called(answer: Answer) -> list[str]:
    """The tools the turn called, without their API's prefix."""
    return [call.tool_name.rsplit("__", 1)[-1] for call in answer.tool_calls]


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Che tempo fa domani a Roma?", "it"),
        ("Wie wird das Wetter morgen in Berlin?", "de"),
    ],
)
async def test_smollm2_calls_the_weather_tool_in_italian_and_german(
    hass: HomeAssistant, household_agent: str, question: str, language: str
) -> None:
    answer = await converse(hass, household_agent, question, None, language)

    assert answer.error is None, answer.error
    assert called(answer)[:1] == ["weather"], (called(answer), answer.speech)


async def test_smollm2_may_look_up_two_places(
    hass: HomeAssistant, household_agent: str
) -> None:
    """The tool stays a branch once called: a second place is a second call."""
    answer = await converse(
        hass, household_agent, "What's the weather in Rome and in Paris?", None
    )

    assert answer.error is None, answer.error
    assert answer.fault != "unreadable"
    assert called(answer)[:1] == ["weather"], (called(answer), answer.speech)
    assert len(called(answer)) <= 2


async def test_smollm2_asked_the_time_never_cancels_a_timer(
    hass: HomeAssistant, household_agent: str
) -> None:
    """A changing intent the model calls waits for the yes: the timer runs on."""
    started = await intent.async_handle(
        hass, "test", "HassStartTimer", {"minutes": {"value": 5}}, device_id=SATELLITE
    )
    assert started.response_type is intent.IntentResponseType.ACTION_DONE
    timers = hass.data[TIMER_DATA].timers
    assert len(timers) == 1

    answer = await converse(
        hass, household_agent, "What time is it?", None, "en", SATELLITE
    )

    assert answer.error is None, answer.error
    assert len(timers) == 1, (called(answer), answer.speech)
    changing = {"HassCancelAllTimers", "HassCancelTimer", "HassTurnOn", "HassTurnOff"}
    for result in answer.tool_results:
        if result.tool_name.rsplit("__", 1)[-1] in changing:
            assert result.result.data["result"].startswith("confirmation needed: ")
