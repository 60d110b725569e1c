"""What a turn leaves in the record: typed turns, tool calls, faults, nothing."""

from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import Context, HomeAssistant
import pytest

from custom_components.desktop_assistant.const import CONF_RECORD, DEFAULT_AGENT_OPTIONS
from custom_components.desktop_assistant.record.models import MAX_TOOL_RESULT
from tests.harness.agent import TEST_API, Agent, run_text_pipeline, speech
from tests.harness.llama_server import MODEL_ID, Reply, text_reply, tool_call_reply

from .conftest import kinds, listed, stored


async def test_a_typed_turn_is_recorded(hass: HomeAssistant, agent: Agent) -> None:
    agent.server.script = [text_reply("Hello! ", "How can I help?")]
    result = await agent.ask("Hi there")
    agent.server.script = [text_reply("It is Monday.")]
    await agent.ask("Which day is it?", result.conversation_id)

    found = await stored(hass, result.conversation_id)
    assert found is not None
    assert found["channel"] == "text"
    assert found["agent_id"] == agent.entity_id
    assert (found["device_id"], found["device_name"]) == (None, None)
    assert found["status"] == "active"
    assert found["started_at"] <= found["last_activity_at"]
    assert [
        (e["kind"], e.get("text"), e.get("source"), e.get("interrupted"))
        for e in found["entries"]
    ] == [
        ("user", "Hi there", "text", None),
        ("assistant", "Hello! How can I help?", None, False),
        ("user", "Which day is it?", "text", None),
        ("assistant", "It is Monday.", None, False),
    ]


async def test_a_tool_call_is_recorded_with_arguments_and_a_cut_result(
    hass: HomeAssistant, agent: Agent
) -> None:
    agent.weather.answer = "x" * (MAX_TOOL_RESULT + 500)
    agent.server.script = [
        tool_call_reply(("weather", '{"place": "Köln", "when": "tomorrow"}')),
        text_reply("Cloudy in Köln."),
    ]
    result = await agent.ask("Weather in Köln tomorrow?")
    assert speech(result) == "Cloudy in Köln."

    found = await stored(hass, result.conversation_id)
    assert kinds(found) == ["user", "tool_call", "assistant"]
    call = found["entries"][1]
    assert call["tool_name"] == "weather"
    assert call["arguments"] == {"place": "Köln", "when": "tomorrow"}
    assert call["result"] == "x" * MAX_TOOL_RESULT
    assert call["error"] is False


async def test_a_reply_cut_by_a_fault_is_marked_interrupted(
    hass: HomeAssistant, agent: Agent
) -> None:
    cut = text_reply("The weather in Rome is ", "sunny and")
    agent.server.script = [Reply(events=cut.events[:-2], cut=True)]
    result = await agent.ask("Weather in Rome?")
    assert speech(result).endswith("cut off.")

    found = await stored(hass, result.conversation_id)
    assert [
        (e["kind"], e.get("text"), e.get("interrupted"), e.get("fault"))
        for e in found["entries"][1:]
    ] == [
        ("assistant", "The weather in Rome is sunny and", True, None),
        (
            "fault",
            "Sorry, my connection to the language model was cut off.",
            None,
            "stream_cut",
        ),
    ]


async def test_a_fault_before_any_reply_is_a_fault_entry(
    hass: HomeAssistant, agent: Agent
) -> None:
    agent.server.script = []  # the stand-in answers 500
    result = await agent.ask("Anything?")
    found = await stored(hass, result.conversation_id)
    assert [(e["kind"], e.get("fault")) for e in found["entries"]] == [
        ("user", None),
        ("fault", "server_error"),
    ]
    assert found["entries"][1]["text"] == speech(result)


@pytest.mark.parametrize("text", ["", "   "])
async def test_a_turn_in_which_nothing_was_said_leaves_nothing(
    hass: HomeAssistant, agent: Agent, text: str
) -> None:
    agent.server.script = [text_reply("Did you say something?")]
    result = await agent.ask(text)
    assert speech(result) == "Did you say something?"
    assert await stored(hass, result.conversation_id) is None
    assert await listed(hass) == []


@pytest.mark.parametrize(
    "agent_options",
    [
        DEFAULT_AGENT_OPTIONS
        | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [TEST_API], CONF_RECORD: False}
    ],
)
async def test_recording_off_for_an_agent(hass: HomeAssistant, agent: Agent) -> None:
    agent.server.script = [text_reply("Not written down.")]
    result = await agent.ask("Keep this to yourself")
    assert speech(result) == "Not written down."
    assert await stored(hass, result.conversation_id) is None


async def test_an_automation_turn_is_recorded_as_text(
    hass: HomeAssistant, agent: Agent
) -> None:
    agent.server.script = [text_reply("Lights are off.")]
    response = await hass.services.async_call(
        conversation.DOMAIN,
        "process",
        {"text": "Turn the lights off", "agent_id": agent.entity_id},
        blocking=True,
        return_response=True,
        context=Context(),
    )
    (found,) = await listed(hass)
    assert found["conversation_id"] == response["conversation_id"]
    assert found["channel"] == "text"
    assert found["first_words"] == "Turn the lights off"


async def test_a_typed_assist_pipeline_turn_is_text(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script = [text_reply("Typed answer.")]
    events = await run_text_pipeline(hass, hass_ws_client, agent.entity_id, "Typed")
    conversation_id = events[-2]["data"]["intent_output"]["conversation_id"]
    found = await stored(hass, conversation_id)
    assert found["channel"] == "text"
    assert found["entries"][0]["source"] == "text"
