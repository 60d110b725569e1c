"""Home Assistant's own tools, called by the agent: timers, media, lights, MCP.

The scripted llama-server stand-in makes the calls a model would; Home
Assistant runs its real tools (the Assist API's intents, the `mcp`
integration against an MCP server on loopback) and the agent carries their
results back to the model.
"""

import asyncio
from collections.abc import AsyncIterator
import json
from pathlib import Path
import sys
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.demo.media_player import DemoMusicPlayer
from homeassistant.components.intent import (
    TimerEventType,
    TimerInfo,
    async_register_timer_handler,
)
from homeassistant.components.media_player import MediaPlayerState
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL, CONF_URL, STATE_ON
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import device_registry as dr, llm
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    setup_test_component_platform,
)

from custom_components.desktop_assistant.const import (
    CONF_TOOL_CALLS,
    DEFAULT_AGENT_OPTIONS,
    TOOL_CALLS_CONSTRAINED,
    TOOL_CALLS_NATIVE,
)
from tests.harness.agent import speech
from tests.harness.agent_entry import async_add_agent, merged_tool_name
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    json_reply,
    text_reply,
    tool_call_reply,
)
from tests.harness.mcp_server import PATH, TOOL, tide_answer
from tests.harness.ports import free_port

REPO = Path(__file__).resolve().parents[2]
ASSIST_ONLY = DEFAULT_AGENT_OPTIONS | {
    CONF_MODEL: MODEL_ID,
    CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
}
NO_TIMERS = "This device is not able to start timers."

# The kitchen's light, a template light over a switch's state, as a person
# would write one.
KITCHEN_LIGHTS = "light.kitchen_lights"
POWER = "input_boolean.kitchen_lights_power"
TEMPLATE_LIGHT = {
    "template": [
        {
            "light": [
                {
                    "name": "Kitchen Lights",
                    "state": f"{{{{ is_state('{POWER}', 'on') }}}}",
                    "turn_on": {
                        "action": "input_boolean.turn_on",
                        "target": {"entity_id": POWER},
                    },
                    "turn_off": {
                        "action": "input_boolean.turn_off",
                        "target": {"entity_id": POWER},
                    },
                }
            ]
        }
    ]
}


@pytest.fixture
async def kitchen_lights(hass: HomeAssistant) -> str:
    """The template light, exposed to Assist as lights are by default."""
    assert await async_setup_component(
        hass, "input_boolean", {"input_boolean": {POWER.split(".")[1]: {}}}
    )
    assert await async_setup_component(hass, "template", TEMPLATE_LIGHT)
    await hass.async_block_till_done()
    assert hass.states.get(KITCHEN_LIGHTS).state == "off"
    return KITCHEN_LIGHTS


async def ask(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None = None,
    device_id: str | None = None,
) -> conversation.ConversationResult:
    """Ask as a satellite does: with its device."""
    return await conversation.async_converse(
        hass,
        text,
        conversation_id,
        Context(),
        "en",
        agent_id,
        device_id=device_id,
    )


def offered(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def tool_message(request: dict[str, Any]) -> dict[str, Any]:
    """The tool result the agent sent back to the model, parsed."""
    message = request["messages"][-1]
    assert message["role"] == "tool"
    return json.loads(message["content"])


@pytest.fixture
async def satellites(hass: HomeAssistant) -> dict[str, str]:
    """Two satellite devices: one registered for timers, as ESPHome's are."""
    entry = MockConfigEntry(domain="esphome", title="Satellites")
    entry.add_to_hass(hass)
    devices = dr.async_get(hass)
    return {
        name: devices.async_get_or_create(
            config_entry_id=entry.entry_id,
            identifiers={("esphome", name)},
            name=name,
        ).id
        for name in ("Kitchen satellite", "Hall satellite")
    }


async def test_timer_from_a_satellite_that_supports_timers(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    satellites: dict[str, str],
    kitchen_lights: str,
) -> None:
    _, agent_id = await async_add_agent(hass, llama_server.url, ASSIST_ONLY)
    kitchen = satellites["Kitchen satellite"]
    events: list[tuple[TimerEventType, TimerInfo]] = []
    unregister = async_register_timer_handler(
        hass, kitchen, lambda event, timer: events.append((event, timer))
    )

    llama_server.script = [
        tool_call_reply(("intent__HassStartTimer", '{"minutes": 5}')),
        text_reply("Your 5 minute timer has started."),
    ]
    result = await ask(hass, agent_id, "Set a timer for 5 minutes", device_id=kitchen)

    assert speech(result) == "Your 5 minute timer has started."
    first, second = llama_server.chat_requests
    assert {"intent__HassStartTimer", "intent__HassCancelTimer"} <= set(offered(first))
    assert NO_TIMERS not in first["messages"][0]["content"]
    assert tool_message(second)["response_type"] == "action_done"
    ((event, timer),) = events
    assert event is TimerEventType.STARTED
    assert (timer.device_id, timer.start_minutes, timer.seconds) == (
        kitchen,
        5,
        300,
    )

    llama_server.script = [
        tool_call_reply(("intent__HassCancelTimer", "{}")),
        text_reply("Timer cancelled."),
    ]
    result = await ask(
        hass, agent_id, "Cancel the timer", result.conversation_id, kitchen
    )

    assert speech(result) == "Timer cancelled."
    assert tool_message(llama_server.chat_requests[-1])["response_type"] == (
        "action_done"
    )
    assert [(event, timer.id) for event, timer in events[1:]] == [
        (TimerEventType.CANCELLED, events[0][1].id)
    ]
    unregister()


async def test_timer_from_a_satellite_without_timers(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    satellites: dict[str, str],
    kitchen_lights: str,
) -> None:
    _, agent_id = await async_add_agent(hass, llama_server.url, ASSIST_ONLY)
    kitchen, hall = satellites["Kitchen satellite"], satellites["Hall satellite"]
    events: list[TimerEventType] = []
    unregister = async_register_timer_handler(
        hass, kitchen, lambda event, timer: events.append(event)
    )
    # A model that tries anyway is refused; told it cannot, it says so.
    llama_server.script = [
        tool_call_reply(("intent__HassStartTimer", '{"minutes": 5}')),
        text_reply("Sorry, this device can't set timers."),
    ]

    result = await ask(hass, agent_id, "Set a timer for 5 minutes", device_id=hall)

    assert speech(result) == "Sorry, this device can't set timers."
    first, second = llama_server.chat_requests
    assert NO_TIMERS in first["messages"][0]["content"]
    assert "intent__HassStartTimer" not in offered(first)
    assert second["messages"][-1]["content"].startswith(
        "error: unknown tool 'intent__HassStartTimer'"
    )
    assert events == []
    unregister()


async def test_media_player_paused_and_light_turned_on(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, kitchen_lights: str
) -> None:
    # Home Assistant's demo music player, exposed as media players are.
    setup_test_component_platform(
        hass, "media_player", [DemoMusicPlayer("Living Room")]
    )
    assert await async_setup_component(
        hass, "media_player", {"media_player": {"platform": "test"}}
    )
    await hass.async_block_till_done()
    player = "media_player.living_room"
    assert hass.states.get(player).state == MediaPlayerState.PLAYING
    _, agent_id = await async_add_agent(hass, llama_server.url, ASSIST_ONLY)

    llama_server.script = [
        tool_call_reply(
            ("media_player__HassMediaPause", '{"name": "Living Room"}'),
            ("intent__HassTurnOn", '{"name": "Kitchen Lights"}'),
        ),
        text_reply("Paused the music and turned on the kitchen lights."),
    ]
    result = await ask(hass, agent_id, "Pause the music and turn on the kitchen lights")

    assert speech(result) == "Paused the music and turned on the kitchen lights."
    assert hass.states.get(player).state == MediaPlayerState.PAUSED
    assert hass.states.get(kitchen_lights).state == STATE_ON
    first, second = llama_server.chat_requests
    assert {"media_player__HassMediaPause", "intent__HassTurnOn"} <= set(offered(first))
    results = [m for m in second["messages"] if m["role"] == "tool"]
    assert [json.loads(m["content"])["response_type"] for m in results] == [
        "action_done",
        "action_done",
    ]


@pytest.mark.parametrize("mode", [TOOL_CALLS_CONSTRAINED, TOOL_CALLS_NATIVE])
async def test_a_changing_intent_called_constrained_waits_for_the_yes(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    kitchen_lights: str,
    mode: str,
) -> None:
    """A model that cannot call tools well changes nothing unasked; a native one as HA does."""
    _, agent_id = await async_add_agent(
        hass, llama_server.url, ASSIST_ONLY | {CONF_TOOL_CALLS: mode}
    )
    call = ("intent__HassTurnOn", {"name": "Kitchen Lights"})
    llama_server.script = [
        json_reply({"tool": call[0], "arguments": call[1]})
        if mode == TOOL_CALLS_CONSTRAINED
        else tool_call_reply((call[0], json.dumps(call[1]))),
        json_reply({"answer": "The kitchen lights are on."})
        if mode == TOOL_CALLS_CONSTRAINED
        else text_reply("The kitchen lights are on."),
    ]
    result = await ask(hass, agent_id, "Turn on the kitchen lights")
    if mode == TOOL_CALLS_NATIVE:
        assert speech(result) == "The kitchen lights are on."
        assert hass.states.get(kitchen_lights).state == STATE_ON
        return

    assert speech(result) == "Shall I run Turn on with name Kitchen Lights?"
    assert hass.states.get(kitchen_lights).state == "off"
    # The model was not asked again: the turn ends with the question.
    assert len(llama_server.chat_requests) == 1

    done = await ask(hass, agent_id, "Yes", result.conversation_id)

    assert speech(done) == "The kitchen lights are on."
    assert hass.states.get(kitchen_lights).state == STATE_ON
    last = llama_server.chat_requests[-1]["messages"][-1]["content"]
    assert last.startswith("Tool result of intent__HassTurnOn (data")
    assert '"response_type":"action_done"' in last


@pytest.fixture
async def mcp_url(socket_enabled: None) -> AsyncIterator[str]:
    """An MCP server in a process of its own, on a loopback port."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.harness.mcp_server", str(port), cwd=REPO
    )
    try:
        async with asyncio.timeout(30):
            while True:
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    await asyncio.sleep(0.1)
                    continue
                writer.close()
                await writer.wait_closed()
                break
        yield f"http://127.0.0.1:{port}{PATH}"
    finally:
        process.terminate()
        await process.wait()


async def test_mcp_server_tool_through_the_agent(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, mcp_url: str
) -> None:
    # Home Assistant's MCP integration, connected as a person adds it.
    mcp_entry = MockConfigEntry(domain="mcp", title="Tides", data={CONF_URL: mcp_url})
    mcp_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(mcp_entry.entry_id)
    api_id = f"mcp-{mcp_entry.entry_id}"
    _, agent_id = await async_add_agent(
        hass,
        llama_server.url,
        DEFAULT_AGENT_OPTIONS
        | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [llm.LLM_API_ASSIST, api_id]},
    )
    # Home Assistant names the tools of two APIs: 2026.10 prefixes each with
    # its API's name, 2026.11 only those whose names collide.
    tool = await merged_tool_name(hass, [llm.LLM_API_ASSIST, api_id], TOOL)

    llama_server.script = [
        tool_call_reply((tool, '{"place": "Genoa"}')),
        text_reply("High tide in Genoa is at 14:05."),
    ]
    result = await ask(hass, agent_id, "When is high tide in Genoa?")

    assert speech(result) == "High tide in Genoa is at 14:05."
    first, second = llama_server.chat_requests
    names = offered(first)
    assert tool in names
    assert names == sorted(names)
    answer = tool_message(second)
    assert answer["content"] == [{"type": "text", "text": tide_answer("Genoa")}]
    assert answer.get("isError") is not True

    # A second conversation: the same prompt prefix, MCP tools included.
    llama_server.script = [text_reply("Hello.")]
    await ask(hass, agent_id, "Hello")
    third = llama_server.chat_requests[-1]
    assert json.dumps(third["tools"]) == json.dumps(first["tools"])
    assert third["messages"][0] == first["messages"][0]
    assert "Tides" in first["messages"][0]["content"]
    await hass.config_entries.async_unload(mcp_entry.entry_id)
