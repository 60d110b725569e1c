"""The seed's live run, with a scripted llama-server and stand-in web services.

examples/tools/ is copied into Home Assistant's config folder, the integration
loads it, and the agent calls each tool in turn, then answers a plain
question without any.
"""

from datetime import timedelta
import json
import os
from pathlib import Path
import re
import shutil
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.agent import Agent, speech
from tests.harness.calendar_tools import DAY
from tests.harness.llama_server import text_reply, tool_call_reply
from tests.harness.web_stand_ins import (
    OSLO,
    OWM_KEY,
    ROME,
    TOMTOM_KEY,
    OpenWeatherMap,
    SearXNG,
    TomTom,
    current_weather,
    tomtom_geography,
    tomtom_poi,
)

from ..conftest import EXAMPLES, ZONE, config_toml
from ..test_calendar import VDIR, write_ics
from ..test_search import RESULTS
from ..test_weather import OSLO_NOW, day_slots, rome_today

pytestmark = pytest.mark.llm_apis(DOMAIN)

TOOLS = ["calendar", "calendar_add", "now", "search", "travel", "weather"]
# Offered with them: the conversation record's and memory's tools.
OFFERED = sorted([*TOOLS, "recall", "recall_conversations", "remember"])


@pytest.fixture
def settings(
    hass: HomeAssistant,
    tmp_path: Path,
    owm: OpenWeatherMap,
    searxng: SearXNG,
    tomtom: TomTom,
) -> Path:
    """Write config.toml, whose [env] points the helpers at the stand-ins."""
    vdir = tmp_path / "calendars"
    for name, components in VDIR.items():
        write_ics(vdir / name, components)
    env_file = tmp_path / "weather.env"
    env_file.write_text(f"KEY={OWM_KEY}\nCITY=Oslo\nCOUNTRY=NO\nUNITS=metric\n")
    cache = tmp_path / "cache" / "udt" / "weather.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps(current_weather(OSLO)))
    owm.cities = {"rome": ROME}
    owm.slots = day_slots(rome_today() + timedelta(days=1))
    searxng.results = RESULTS
    tomtom.places = {
        "schiphol": [
            tomtom_poi(
                "Amsterdam Airport Schiphol", "Haarlemmermeer", 52.30907, 4.76278
            )
        ],
        "utrecht": [tomtom_geography("Utrecht", 52.09083, 5.12222)],
    }
    root = Path(hass.config.path(DOMAIN))
    root.mkdir()
    (root / "config.toml").write_text(
        config_toml(
            {
                "TZ": ZONE,
                "HOME": str(tmp_path / "home"),
                "XDG_CACHE_HOME": str(tmp_path / "cache"),
                "CALENDAR_DIR": str(vdir),
                "WEATHER_ENV": str(env_file),
                "OWM_URL": owm.url,
                "SEARXNG_URL": searxng.url,
                "TOMTOM_URL": tomtom.url,
                "TOMTOM_API_KEY": TOMTOM_KEY,
                "TRAVEL_HOME": "Utrecht",
                "TOOL_WEB_TIMEOUT": "5",
            },
            # The home town is no secret: the travel answer names it.
            shown=["TRAVEL_HOME"],
        )
    )
    return root


@pytest.fixture
def tool_files(settings: Path) -> dict[str, str]:
    """The example tool files, written into tools/ before the agent starts."""
    return {path.stem: path.read_text() for path in EXAMPLES.glob("*.toml")}


@pytest.fixture
async def live_agent(agent: Agent, settings: Path) -> Agent:
    """The agent, with the rest of examples/tools/ (its helpers) copied next to the tool files."""
    tools_dir = settings / "tools"
    for path in EXAMPLES.iterdir():
        if path.is_file() and path.suffix != ".toml":
            shutil.copy2(path, tools_dir / path.name)
    assert sorted(os.listdir(tools_dir)) == sorted(
        path.name for path in EXAMPLES.iterdir() if path.is_file()
    )
    return agent


async def ask_with_tool(
    agent: Agent, question: str, tool: str, arguments: dict[str, Any]
) -> tuple[str, str | None]:
    """Ask a question the model answers by calling a tool.

    Return what the tool gave the model and the phrase announced before it ran.
    """
    agent.server.script = [
        tool_call_reply((f"{DOMAIN}__{tool}", json.dumps(arguments))),
        text_reply("Here is what I found."),
    ]
    result = await agent.ask(question)
    assert speech(result) == "Here is what I found."
    call = agent.chat_log(result.conversation_id)[-3]
    assert isinstance(call, conversation.AssistantContent)
    assert [tool_call.tool_name for tool_call in call.tool_calls] == [
        f"{DOMAIN}__{tool}"
    ]
    request = agent.server.chat_requests[-1]
    assert [offered["function"]["name"] for offered in request["tools"]] == [
        f"{DOMAIN}__{name}" for name in OFFERED
    ]
    tool_message = request["messages"][-1]
    assert tool_message["role"] == "tool"
    return tool_message["content"], call.content


async def test_live_run(live_agent: Agent, owm: OpenWeatherMap, tomtom: TomTom) -> None:
    started = time.monotonic()

    result, announced = await ask_with_tool(live_agent, "What time is it?", "now", {})
    assert re.fullmatch(r"[A-Z][a-z]+day \d\d [A-Z][a-z]+ \d{4}, \d\d:\d\d", result)
    assert announced is None

    result, announced = await ask_with_tool(
        live_agent,
        "What's on my calendar on the third of November?",
        "calendar",
        {"start": "2026-11-03", "days": 1},
    )
    assert (result, announced) == ("2026-11-03 12:30 Team lunch", None)

    result, announced = await ask_with_tool(
        live_agent, "How's the weather?", "weather", {}
    )
    assert result == OSLO_NOW
    assert announced in {"Checking the weather.", "Let me look at the weather."}
    # Home, now: from conky-theme-udt's fresh cache, without a request.
    assert owm.requests == []

    tomorrow = rome_today() + timedelta(days=1)
    result, announced = await ask_with_tool(
        live_agent,
        "Will it rain in Rome tomorrow?",
        "weather",
        {"place": "Rome", "when": "tomorrow"},
    )
    assert result.startswith(
        f"Rome, IT tomorrow ({tomorrow:%A} {tomorrow}): light rain"
    )
    assert announced in {"Checking the weather.", "Let me look at the weather."}

    result, announced = await ask_with_tool(
        live_agent, "Search the web for Kokoro TTS", "search", {"query": "Kokoro TTS"}
    )
    assert result.splitlines()[0] == (
        "Kokoro TTS - Hugging Face: Kokoro is an open-weight TTS model with 82 million"
        " parameters."
    )
    assert len(result.splitlines()) == 5
    assert announced in {"Searching the web.", "Let me look that up."}

    result, announced = await ask_with_tool(
        live_agent,
        "How long to drive to the airport?",
        "travel",
        {"destination": "Schiphol"},
    )
    assert result.startswith(
        "From Utrecht to Amsterdam Airport Schiphol (Haarlemmermeer): 38 min by car"
    )
    assert TOMTOM_KEY not in result
    assert announced in {"Checking the traffic.", "Let me check the route."}

    # A tool that changes things: asked about, run on the yes, then listed.
    live_agent.server.script = [
        tool_call_reply(
            (
                f"{DOMAIN}__calendar_add",
                json.dumps({"title": "Dentist", "start": f"{DAY} 10:30"}),
            )
        )
    ]
    asked = await live_agent.ask("Put the dentist in my calendar")
    assert speech(asked) == f"Add Dentist to the calendar on {DAY} 10:30?"
    live_agent.server.script = [text_reply("Added.")]
    await live_agent.ask("Yes", asked.conversation_id)
    assert live_agent.server.chat_requests[-1]["messages"][-1]["content"] == (
        f"added to personal: {DAY} 10:30 Dentist (until 11:30)"
    )
    result, _ = await ask_with_tool(
        live_agent, "What do I have that day?", "calendar", {"start": DAY}
    )
    assert result == f"{DAY} 10:30 Dentist"

    # A plain question: the tools are offered, none is called.
    live_agent.server.script = [text_reply("The Moon is about 384,000 km away.")]
    plain = await live_agent.ask("How far away is the Moon?")
    assert speech(plain) == "The Moon is about 384,000 km away."
    request = live_agent.server.chat_requests[-1]
    assert len(request["tools"]) == len(OFFERED)
    assert request["messages"][-1]["role"] == "user"
    assert request["messages"][-1]["content"].startswith("How far away is the Moon?")
    assert not any(
        isinstance(item, conversation.ToolResultContent)
        for item in live_agent.chat_log(plain.conversation_id)
    )
    # The whole run, helpers and stand-ins included, stays quick.
    assert time.monotonic() - started < 30
