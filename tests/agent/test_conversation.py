"""The agent's tool loop against a llama-server stand-in streaming its real bytes."""

from datetime import UTC, datetime
import json
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.helpers import intent, llm
from homeassistant.util import dt as dt_util
import pytest

from custom_components.desktop_assistant.const import (
    CONF_MAX_HISTORY,
    CONF_REQUEST_TIMEOUT,
    CONF_TOOL_ROUNDS,
    DEFAULT_AGENT_OPTIONS,
)
from tests.harness.agent import TEST_API, Agent, run_text_pipeline, speech
from tests.harness.llama_server import (
    MODEL_ID,
    Reply,
    error_body,
    final_chunk,
    sse,
    text_reply,
    tool_call_reply,
)


async def test_plain_answer(agent: Agent) -> None:
    agent.server.script = [text_reply("The capital ", "of Italy is ", "Rome.")]
    result = await agent.ask("What is the capital of Italy?")

    assert speech(result) == "The capital of Italy is Rome."
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert result.continue_conversation is False
    (request,) = agent.server.chat_requests
    assert request["stream"] is True
    assert request["cache_prompt"] is True
    assert request["model"] == MODEL_ID
    assert [t["function"]["name"] for t in request["tools"]] == [
        "GetDateTime",
        "weather",
    ]
    assert request["messages"][-1] == {
        "role": "user",
        "content": "What is the capital of Italy?",
    }
    content = agent.chat_log(result.conversation_id)
    assert isinstance(content[-1], conversation.AssistantContent)
    assert content[-1].content == "The capital of Italy is Rome."


@pytest.mark.parametrize(
    "agent_options",
    [DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: []}],
)
async def test_no_tools_key_without_apis(agent: Agent) -> None:
    agent.server.script = [text_reply("Hi.")]
    await agent.ask("Hello")
    (request,) = agent.server.chat_requests
    assert "tools" not in request


async def test_stream_split_at_every_byte(agent: Agent) -> None:
    agent.server.script = [
        text_reply("Caffè ", "è pronto ☕."),
    ]
    agent.server.script[0].piece_size = 1
    result = await agent.ask("Il caffè?", language="it")
    assert speech(result) == "Caffè è pronto ☕."


async def test_keepalive_comments_and_garbage_lines_are_skipped(agent: Agent) -> None:
    reply = text_reply("Still ", "here.")
    reply.events[1:1] = [
        b": keep-alive\n\n",
        b"data: {not json\n\n",
        b"event: ping\n\n",
    ]
    agent.server.script = [reply]
    result = await agent.ask("Are you there?")
    assert speech(result) == "Still here."


async def test_thinking_is_not_spoken(agent: Agent) -> None:
    agent.server.script = [text_reply("Four.", thinking="2 plus 2 is 4")]
    result = await agent.ask("What is 2 plus 2?")
    assert speech(result) == "Four."
    final = agent.chat_log(result.conversation_id)[-1]
    assert final.thinking_content == "2 plus 2 is 4"


async def test_tool_call_with_arguments_in_fragments(agent: Agent) -> None:
    agent.server.script = [
        tool_call_reply(("weather", '{"place": "Rome", "when": "now"}'), fragments=5),
        text_reply("It is clear in Rome, 18 degrees."),
    ]
    result = await agent.ask("What's the weather in Rome?")

    assert agent.weather.calls == [{"place": "Rome", "when": "now"}]
    assert speech(result) == "It is clear in Rome, 18 degrees."
    first, second = agent.server.chat_requests
    assert "tools" in first and "tools" in second
    assistant, tool = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [
        {
            "id": "call_0_weather",
            "type": "function",
            "function": {
                "name": "weather",
                "arguments": '{"place": "Rome", "when": "now"}',
            },
        }
    ]
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_0_weather",
        "content": "Rome: clear sky, 18 °C",
    }
    content = agent.chat_log(result.conversation_id)
    call, tool_result, answer = content[-3:]
    assert call.tool_calls[0].tool_args == {"place": "Rome", "when": "now"}
    assert tool_result.result == llm.ToolResult(
        data={"result": "Rome: clear sky, 18 °C"}
    )
    assert answer.content == "It is clear in Rome, 18 degrees."


async def test_two_parallel_calls(agent: Agent) -> None:
    agent.server.script = [
        tool_call_reply(
            ("weather", '{"place": "Milan"}'), ("GetDateTime", "{}"), fragments=2
        ),
        text_reply("In Milan it is clear; it is 14:05."),
    ]
    await agent.ask("Weather in Milan and the time?")

    assert agent.weather.calls == [{"place": "Milan"}]
    assert agent.time.calls == [{}]
    messages = agent.server.chat_requests[1]["messages"]
    assert [c["function"]["name"] for c in messages[-3]["tool_calls"]] == [
        "weather",
        "GetDateTime",
    ]
    assert {m["tool_call_id"]: m["content"] for m in messages[-2:]} == {
        "call_0_weather": "Rome: clear sky, 18 °C",
        "call_1_GetDateTime": "14:05",
    }


@pytest.mark.parametrize(
    "agent_options",
    [
        DEFAULT_AGENT_OPTIONS
        | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [TEST_API], CONF_TOOL_ROUNDS: 2}
    ],
)
async def test_round_limit_forces_a_text_answer(agent: Agent) -> None:
    agent.server.script = [
        tool_call_reply(("GetDateTime", "{}")),
        tool_call_reply(("GetDateTime", "{}")),
        text_reply("It is 14:05."),
    ]
    result = await agent.ask("What time is it?")

    assert speech(result) == "It is 14:05."
    assert len(agent.time.calls) == 2
    requests = agent.server.chat_requests
    assert ["tools" in r for r in requests] == [True, True, False]
    # The last request still carries this turn's calls and results.
    assert [m["role"] for m in requests[2]["messages"][-4:]] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]


async def test_malformed_arguments_go_back_to_the_model(agent: Agent) -> None:
    agent.server.script = [
        tool_call_reply(("weather", '{"place": "Rome"')),
        text_reply("Sorry, I could not check the weather."),
    ]
    result = await agent.ask("Weather in Rome?")

    assert agent.weather.calls == []
    assert speech(result) == "Sorry, I could not check the weather."
    tool = agent.server.chat_requests[1]["messages"][-1]
    assert tool["role"] == "tool"
    assert tool["tool_call_id"] == "call_0_weather"
    assert tool["content"].startswith("error: arguments are not valid JSON")


async def test_arguments_that_are_not_an_object(agent: Agent) -> None:
    agent.server.script = [tool_call_reply(("weather", '["Rome"]')), text_reply("Hm.")]
    await agent.ask("Weather?")
    tool = agent.server.chat_requests[1]["messages"][-1]
    assert tool["content"].startswith("error: arguments must be a JSON object")


async def test_unknown_tool_goes_back_to_the_model(agent: Agent) -> None:
    agent.server.script = [
        tool_call_reply(("lights_off", "{}"), ("GetDateTime", "{}")),
        text_reply("It is 14:05; I cannot switch lights."),
    ]
    result = await agent.ask("Lights off, and what time is it?")

    assert speech(result) == "It is 14:05; I cannot switch lights."
    assert agent.time.calls == [{}]
    tools = {
        m["tool_call_id"]: m["content"]
        for m in agent.server.chat_requests[1]["messages"]
        if m["role"] == "tool"
    }
    assert tools["call_1_GetDateTime"] == "14:05"
    assert tools["call_0_lights_off"] == (
        "error: unknown tool 'lights_off'; offered: GetDateTime, weather"
    )


async def test_stream_cut_keeps_partial_text_and_next_turn_works(agent: Agent) -> None:
    cut = text_reply("The weather in Rome is ", "sunny and")
    agent.server.script = [
        Reply(events=cut.events[:-2], cut=True),
        text_reply("Hello again."),
    ]
    result = await agent.ask("Weather in Rome?")

    assert speech(result) == (
        "The weather in Rome is sunny and"
        "\n\nSorry, my connection to the language model was cut off."
    )
    # One answer: what was streamed, then the fault (test_fault_answer.py).
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert result.response.speech_slots == {"fault": "stream_cut"}

    result = await agent.ask("Hello", result.conversation_id)
    assert speech(result) == "Hello again."
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE


async def test_stream_without_done_is_a_cut(agent: Agent) -> None:
    reply = text_reply("Half")
    agent.server.script = [Reply(events=reply.events[:-1])]
    result = await agent.ask("Tell me")
    assert (
        speech(result)
        == "Half\n\nSorry, my connection to the language model was cut off."
    )


async def test_http_500_in_the_persons_language(agent: Agent) -> None:
    agent.server.script = [
        Reply(status=500, body=error_body(500, "failed to load model", "server_error")),
        text_reply("Eccomi."),
    ]
    result = await agent.ask("Che ore sono?", language="it")
    assert (
        speech(result)
        == "Scusa, il server del modello linguistico ha segnalato un errore."
    )
    assert result.response.response_type is intent.IntentResponseType.ERROR

    result = await agent.ask("Ci sei?", result.conversation_id, language="it")
    assert speech(result) == "Eccomi."


async def test_error_event_inside_the_stream(agent: Agent) -> None:
    reply = text_reply("Partial")
    reply.events[2:] = [sse(error_body(500, "context size exceeded", "server_error"))]
    agent.server.script = [reply]
    result = await agent.ask("Long question")
    assert (
        speech(result)
        == "Partial\n\nSorry, the language model server reported an error."
    )


async def test_only_garbage_is_unreadable(agent: Agent) -> None:
    agent.server.script = [
        Reply(events=[b"data: <html>oops</html>\n\n", sse("[DONE]")])
    ]
    result = await agent.ask("Hello?")
    assert (
        speech(result) == "Sorry, the language model sent an answer I could not read."
    )


@pytest.mark.parametrize(
    "agent_options",
    [
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: MODEL_ID,
            CONF_LLM_HASS_API: [TEST_API],
            CONF_REQUEST_TIMEOUT: 0.3,
        }
    ],
)
async def test_slow_first_byte_times_out(agent: Agent) -> None:
    agent.server.script = [text_reply("Too late.", delay=5), text_reply("On time.")]
    result = await agent.ask("Quick?")
    assert speech(result) == "Sorry, the language model server did not answer in time."

    result = await agent.ask("Again?", result.conversation_id)
    assert speech(result) == "On time."


async def test_server_down_then_back(agent: Agent) -> None:
    port = agent.server.port
    await agent.server.stop()
    result = await agent.ask("Hello?")
    assert speech(result) == "Sorry, I can't reach the language model server right now."

    await agent.server.start(port)
    agent.server.script = [text_reply("I'm back.")]
    result = await agent.ask("Hello?", result.conversation_id)
    assert speech(result) == "I'm back."


async def test_empty_answer_still_says_something(agent: Agent) -> None:
    agent.server.script = [text_reply()]
    result = await agent.ask("Hmm")
    assert speech(result) == "Sorry, I have no answer to that."
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE


async def test_question_keeps_the_conversation_open(agent: Agent) -> None:
    agent.server.script = [text_reply("Which room do you mean?")]
    result = await agent.ask("Turn on the light")
    assert result.continue_conversation is True


async def test_history_keeps_the_questions_and_final_replies_only(
    agent: Agent,
) -> None:
    """A voice or Assist conversation: tool calls and results live only inside their turn."""
    agent.server.script = [
        tool_call_reply(("weather", '{"place": "Rome"}'), text="Let me see."),
        text_reply("Clear in Rome."),
        text_reply("You are welcome."),
    ]
    first = await agent.ask("Weather in Rome?")
    await agent.ask("Thanks!", first.conversation_id)

    turn_one_first, turn_one_second, turn_two = agent.server.chat_requests
    # Inside turn one, its call and result go to the model.
    assert [m["role"] for m in turn_one_second["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    assert turn_two["messages"][1:] == [
        {"role": "user", "content": "Weather in Rome?"},
        {"role": "assistant", "content": "Clear in Rome."},
        {"role": "user", "content": "Thanks!"},
    ]
    # The prefix is byte-identical across turns: system prompt and tools.
    assert json.dumps(turn_two["messages"][0]) == json.dumps(
        turn_one_first["messages"][0]
    )
    assert json.dumps(turn_two["tools"]) == json.dumps(turn_one_first["tools"])


@pytest.mark.parametrize(
    "agent_options",
    [
        DEFAULT_AGENT_OPTIONS
        | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [TEST_API], CONF_MAX_HISTORY: 3}
    ],
)
async def test_history_window(agent: Agent) -> None:
    agent.server.script = [text_reply(f"Answer {n}.") for n in range(4)]
    conversation_id = None
    for n in range(4):
        result = await agent.ask(f"Question {n}?", conversation_id)
        conversation_id = result.conversation_id

    messages = agent.server.chat_requests[-1]["messages"]
    # Three earlier messages fit; the window starts at a question, so two stay.
    assert messages[1:] == [
        {"role": "user", "content": "Question 2?"},
        {"role": "assistant", "content": "Answer 2."},
        {"role": "user", "content": "Question 3?"},
    ]


@pytest.mark.parametrize(
    "agent_options",
    [DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: []}],
)
@pytest.mark.freeze_time("2026-11-30 09:00:00")
async def test_clock_moves_out_of_the_cached_prefix(agent: Agent, freezer: Any) -> None:
    # Frozen before setup, so the seven minutes below cross no scheduled job.
    assert dt_util.utcnow() == datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    agent.server.script = [text_reply("Hi."), text_reply("Hi again.")]
    await agent.ask("Hello")
    freezer.move_to("2026-11-30 09:07:13")
    await agent.ask("Hello again")

    first, second = agent.server.chat_requests
    assert first["messages"][0] == second["messages"][0]
    assert "Current time is" not in first["messages"][0]["content"]
    assert second["messages"][-1]["content"].startswith(
        "Hello again\n\nCurrent time is "
    )


async def test_timings_reach_the_trace(agent: Agent) -> None:
    reply = text_reply("Hi.")
    reply.events[-2] = sse(final_chunk("stop", cache_n=120, prompt_n=3))
    agent.server.script = [reply]
    await agent.ask("Hello")

    last_trace = trace.async_get_traces()[-1].as_dict()
    timings = [
        event["data"]["timings"]
        for event in last_trace["events"]
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        and "timings" in event["data"]
    ]
    assert timings[0][0]["cache_n"] == 120
    assert timings[0][0]["prompt_n"] == 3


async def test_converse_through_home_assistant(agent: Agent) -> None:
    """conversation.process, as automations call it, reaches the agent."""
    agent.server.script = [text_reply("Done.")]
    response = await agent.hass.services.async_call(
        "conversation",
        "process",
        {"text": "Hello", "agent_id": agent.entity_id},
        blocking=True,
        return_response=True,
    )
    assert response["response"]["speech"]["plain"]["speech"] == "Done."


async def test_assist_pipeline_text_in_text_out(
    agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script = [
        tool_call_reply(("weather", '{"place": "Rome"}')),
        text_reply("Clear ", "in Rome, ", "eighteen degrees."),
    ]
    events = await run_text_pipeline(
        agent.hass, hass_ws_client, agent.entity_id, "Weather in Rome?"
    )

    types = [event["type"] for event in events]
    assert types[:2] == ["run-start", "intent-start"]
    assert types[-2:] == ["intent-end", "run-end"]
    deltas = [
        event["data"]["chat_log_delta"]
        for event in events
        if event["type"] == "intent-progress" and "chat_log_delta" in event["data"]
    ]
    # The reply arrived piece by piece, after the tool's result.
    texts = [delta["content"] for delta in deltas if delta.get("content")]
    assert texts == ["Clear ", "in Rome, ", "eighteen degrees."]
    assert any(delta.get("role") == "tool_result" for delta in deltas)
    intent_output = events[-2]["data"]["intent_output"]
    assert intent_output["response"]["speech"]["plain"]["speech"] == (
        "Clear in Rome, eighteen degrees."
    )
    assert agent.weather.calls == [{"place": "Rome"}]


async def test_changed_options_take_effect_without_restart(agent: Agent) -> None:
    (subentry,) = agent.entry.subentries.values()
    agent.hass.config_entries.async_update_subentry(
        agent.entry,
        subentry,
        data={**subentry.data, CONF_MODEL: "other-model.gguf", CONF_LLM_HASS_API: []},
    )
    await agent.hass.async_block_till_done()
    agent.server.script = [text_reply("Hi.")]
    await agent.ask("Hello")
    (request,) = agent.server.chat_requests
    assert request["model"] == "other-model.gguf"
    assert "tools" not in request
