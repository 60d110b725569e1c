"""Whatever llama-server (or something else at its URL) sends, the agent answers.

Each case goes through the public way in: a question to the agent, its
server a stand-in sending the hostile bytes over a real socket. Each asserts
what the person hears and that the next question works.
"""

import json
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.helpers import intent
import pytest

from custom_components.desktop_assistant.const import (
    CONF_REQUEST_TIMEOUT,
    CONF_TURN_TIMEOUT,
    DEFAULT_AGENT_OPTIONS,
)
from custom_components.desktop_assistant.server.client import MAX_EVENT_BYTES
from tests.harness.agent import TEST_API, Agent, speech
from tests.harness.llama_server import (
    MODEL_ID,
    Reply,
    chunk,
    final_chunk,
    sse,
    text_reply,
    tool_call_reply,
)

UNREADABLE = "Sorry, the language model sent an answer I could not read."
SERVER_ERROR = "Sorry, the language model server reported an error."
TIMEOUT = "Sorry, the language model server did not answer in time."


def stream(*deltas: dict[str, Any] | bytes, finish: str = "stop") -> Reply:
    """A reply streaming these deltas (or raw events) between role and [DONE]."""
    events = [sse(chunk({"role": "assistant", "content": None}))]
    events += [item if isinstance(item, bytes) else sse(chunk(item)) for item in deltas]
    events += [sse(final_chunk(finish)), sse("[DONE]")]
    return Reply(events=events)


def calls(*fragments: dict[str, Any]) -> dict[str, Any]:
    """A delta carrying tool-call fragments."""
    return {"tool_calls": list(fragments)}


async def assert_fault_then_recovery(
    agent: Agent, question: str, expected: str
) -> conversation.ConversationResult:
    """Ask; the person hears `expected`; the next question works.

    A fault before any text is an error response; after text, the text and
    the fault sentence are one answer (see test_fault_answer.py).
    """
    result = await agent.ask(question)
    assert speech(result) == expected
    assert result.response.response_type is (
        intent.IntentResponseType.ACTION_DONE
        if "\n\n" in expected
        else intent.IntentResponseType.ERROR
    )
    agent.server.script.append(text_reply("Back to normal."))
    again = await agent.ask("Are you there?", result.conversation_id)
    assert speech(again) == "Back to normal."
    assert again.response.response_type is intent.IntentResponseType.ACTION_DONE
    return result


async def assert_next_question_works(agent: Agent, conversation_id: str) -> None:
    agent.server.script.append(text_reply("Back to normal."))
    again = await agent.ask("Are you there?", conversation_id)
    assert speech(again) == "Back to normal."


def tool_messages(request: dict[str, Any]) -> dict[str, str]:
    """The tool results a request sends back, by tool call id."""
    return {
        m["tool_call_id"]: m["content"]
        for m in request["messages"]
        if m["role"] == "tool"
    }


async def test_arguments_as_a_json_object_are_accepted(agent: Agent) -> None:
    agent.server.script = [
        stream(
            calls(
                {
                    "index": 0,
                    "id": "call_w",
                    "type": "function",
                    "function": {"name": "weather", "arguments": {"place": "Rome"}},
                }
            ),
            finish="tool_calls",
        ),
        text_reply("Clear in Rome."),
    ]
    result = await agent.ask("Weather in Rome?")
    assert speech(result) == "Clear in Rome."
    assert agent.weather.calls == [{"place": "Rome"}]
    # The model gets its call back as JSON text, as the API defines it.
    assistant = agent.server.chat_requests[1]["messages"][-2]
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"place": "Rome"}'
    await assert_next_question_works(agent, result.conversation_id)


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(
            [sse({**chunk({}), "choices": ["not an object", 7, None]})],
            id="choices-items-not-objects",
        ),
        pytest.param([sse({**chunk({}), "choices": "all"})], id="choices-not-a-list"),
        pytest.param([sse(chunk({"content": 42}))], id="content-a-number"),
        pytest.param([sse(chunk({"content": {"text": "hi"}}))], id="content-an-object"),
        pytest.param(
            [sse(chunk(calls("weather", 3, ["x"])))], id="tool-calls-items-not-objects"
        ),
        pytest.param([sse(chunk({"tool_calls": "weather"}))], id="tool-calls-a-string"),
        pytest.param(
            [sse(chunk(calls({"index": 0, "function": "weather"})))],
            id="function-a-string",
        ),
        pytest.param([sse(chunk({"content": ["a", "b"]}))], id="content-a-list"),
        pytest.param(
            [sse({"choices": [{"delta": "hello"}], "timings": "fast"})],
            id="delta-a-string-timings-a-string",
        ),
    ],
)
async def test_wrong_types_alone_are_unreadable(
    agent: Agent, events: list[bytes]
) -> None:
    agent.server.script = [stream(*events)]
    await assert_fault_then_recovery(agent, "Hello?", UNREADABLE)


async def test_wrong_types_beside_a_real_answer_are_skipped(agent: Agent) -> None:
    last = final_chunk("stop")
    last["timings"] = ["not", "an", "object"]
    agent.server.script = [
        Reply(
            events=[
                sse(chunk({"role": "assistant", "content": None})),
                sse(chunk({"content": "Rome "})),
                sse({**chunk({}), "choices": [1, "two"]}),
                sse(chunk({"content": 3.5})),
                sse(chunk({"content": "is sunny."})),
                sse(chunk({"reasoning_content": {"deep": "thought"}})),
                sse(last),
                sse("[DONE]"),
            ]
        )
    ]
    result = await agent.ask("Weather?")
    assert speech(result) == "Rome is sunny."
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    await assert_next_question_works(agent, result.conversation_id)


@pytest.mark.parametrize(
    "index", [pytest.param(None, id="null"), "0", pytest.param(..., id="missing")]
)
async def test_calls_without_an_integer_index_are_never_merged(
    agent: Agent, index: Any
) -> None:
    def fragment(call_id: str, place: str) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": call_id,
            "type": "function",
            "function": {"name": "weather", "arguments": json.dumps({"place": place})},
        }
        if index is not ...:
            item["index"] = index
        return item

    agent.server.script = [
        stream(
            calls(fragment("call_a", "Rome")),
            calls(fragment("call_b", "Oslo")),
            finish="tool_calls",
        ),
        text_reply("Rome and Oslo are clear."),
    ]
    result = await agent.ask("Weather in Rome and Oslo?")
    assert speech(result) == "Rome and Oslo are clear."
    assert agent.weather.calls == [{"place": "Rome"}, {"place": "Oslo"}]
    assert tool_messages(agent.server.chat_requests[1]) == {
        "call_a": "Rome: clear sky, 18 °C",
        "call_b": "Rome: clear sky, 18 °C",
    }
    await assert_next_question_works(agent, result.conversation_id)


async def test_a_name_split_across_fragments_is_joined(agent: Agent) -> None:
    agent.server.script = [
        stream(
            calls({"index": 0, "id": "call_1", "function": {"name": "wea"}}),
            calls({"index": 0, "function": {"name": "ther", "arguments": '{"pl'}}),
            calls({"index": 0, "function": {"arguments": 'ace": "Rome"}'}}),
            finish="tool_calls",
        ),
        text_reply("Clear."),
    ]
    result = await agent.ask("Weather in Rome?")
    assert speech(result) == "Clear."
    assert agent.weather.calls == [{"place": "Rome"}]
    await assert_next_question_works(agent, result.conversation_id)


async def test_duplicate_call_ids_each_get_their_own_result(agent: Agent) -> None:
    agent.server.script = [
        stream(
            calls(
                {
                    "index": 0,
                    "id": "call_1",
                    "function": {"name": "weather", "arguments": '{"place": "Rome"}'},
                },
                {
                    "index": 1,
                    "id": "call_1",
                    "function": {"name": "GetDateTime", "arguments": "{}"},
                },
            ),
            finish="tool_calls",
        ),
        text_reply("Clear, and it is 14:05."),
    ]
    result = await agent.ask("Weather and time?")
    assert speech(result) == "Clear, and it is 14:05."
    assert agent.weather.calls == [{"place": "Rome"}]
    assert agent.time.calls == [{}]
    messages = agent.server.chat_requests[1]["messages"]
    ids = [call["id"] for call in messages[-3]["tool_calls"]]
    assert ids[0] == "call_1"
    assert len(set(ids)) == 2
    assert tool_messages(agent.server.chat_requests[1]) == {
        ids[0]: "Rome: clear sky, 18 °C",
        ids[1]: "14:05",
    }
    await assert_next_question_works(agent, result.conversation_id)


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        pytest.param("[" * 300_000, "error: arguments nest too deeply", id="text"),
        pytest.param(
            '{"place": ' + '{"a": ' * 100 + "1" + "}" * 101,
            "error: arguments nest too deeply",
            id="text-within-the-parser's-reach",
        ),
        pytest.param(
            '{"place": ' + "9" * 5000 + "}",
            "error: arguments are not usable JSON",
            id="integer-over-4300-digits",
        ),
        # Python reads these as inf and nan; the next request could not
        # carry them (JSON has no Infinity), and llama-server refuses it.
        pytest.param('{"place": 1e999}', "error: arguments hold a number", id="1e999"),
        pytest.param('{"place": NaN}', "error: arguments hold a number", id="NaN"),
    ],
)
async def test_hostile_arguments_go_back_to_the_model(
    agent: Agent, arguments: str, error: str
) -> None:
    agent.server.script = [
        tool_call_reply(("weather", arguments)),
        text_reply("I could not check."),
    ]
    result = await agent.ask("Weather?")
    assert speech(result) == "I could not check."
    assert agent.weather.calls == []
    (content,) = tool_messages(agent.server.chat_requests[1]).values()
    assert content.startswith(error)
    # The call is echoed in the next request as strict JSON.
    (call,) = agent.server.chat_requests[1]["messages"][-2]["tool_calls"]
    json.loads(call["function"]["arguments"], parse_constant=refuse_constant)
    await assert_next_question_works(agent, result.conversation_id)


def refuse_constant(name: str) -> None:
    """Strict JSON: Infinity, -Infinity and NaN are not JSON."""
    raise AssertionError(f"{name} in a request")


async def test_an_object_nested_300000_deep_is_unreadable(agent: Agent) -> None:
    # 600 KB: within the event size limit, far past what the JSON parser nests.
    deep = "[" * 300_000 + "]" * 300_000
    event = (
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, '
        '"function": {"name": "weather", "arguments": ' + deep + "}}]}}]}"
    )
    agent.server.script = [stream(f"data: {event}\n\n".encode())]
    await assert_fault_then_recovery(agent, "Weather?", UNREADABLE)
    assert agent.weather.calls == []


async def test_a_service_that_does_not_speak_http(agent: Agent) -> None:
    agent.server.script = [Reply(raw=b"SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n")]
    await assert_fault_then_recovery(agent, "Hello?", SERVER_ERROR)


async def test_an_error_body_that_is_not_utf8(agent: Agent) -> None:
    agent.server.script = [Reply(status=500, body=b"\xff\xfe\x00boom\xc3\x28")]
    await assert_fault_then_recovery(agent, "Hello?", SERVER_ERROR)


async def test_a_200_mb_error_body_is_not_read_whole(agent: Agent) -> None:
    block = b"x" * (1024 * 1024)
    agent.server.script = [Reply(status=500, body=block, body_repeat=200)]
    await assert_fault_then_recovery(agent, "Hello?", SERVER_ERROR)
    # The agent read 64 KB and hung up; the rest never left the server's
    # socket buffers.
    (sent,) = agent.server.body_bytes_sent
    assert sent < 50 * len(block)


async def test_an_sse_line_that_never_ends(agent: Agent) -> None:
    endless = b"data: " + b"x" * (MAX_EVENT_BYTES + 1024)
    agent.server.script = [
        Reply(events=[sse(chunk({"role": "assistant"})), endless], hold=60)
    ]
    # The line's length, not the 60 s hold, ends the answer: it is unreadable.
    await assert_fault_then_recovery(agent, "Hello?", UNREADABLE)


@pytest.mark.parametrize(
    "agent_options",
    [
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: MODEL_ID,
            CONF_LLM_HASS_API: [TEST_API],
            CONF_REQUEST_TIMEOUT: 2.0,
            CONF_TURN_TIMEOUT: 4.0,
        }
    ],
)
async def test_keep_alive_comments_forever_meet_the_turn_deadline(
    agent: Agent,
) -> None:
    reply = text_reply("Let me think")
    agent.server.script = [
        Reply(events=reply.events[:3], trickle=b": keep-alive\n\n", trickle_every=0.1)
    ]
    started = time.perf_counter()
    result = await agent.ask("Hello?")
    elapsed = time.perf_counter() - started
    assert speech(result) == f"Let me think\n\n{TIMEOUT}"
    assert result.response.speech_slots == {"fault": "timeout"}
    # Comments (every 0.1 s) kept each read under the 2 s request timeout; the
    # 4 s turn deadline ended it (the comments would go on forever).
    assert elapsed > 3.9
    await assert_next_question_works(agent, result.conversation_id)


async def test_legacy_error_event(agent: Agent) -> None:
    reply = text_reply("Partial")
    reply.events[2:] = [
        b'error: {"code": 500, "message": "slot unavailable", "type": "server_error"}'
        b"\n\n"
    ]
    agent.server.script = [reply]
    await assert_fault_then_recovery(agent, "Hello?", f"Partial\n\n{SERVER_ERROR}")


@pytest.mark.parametrize("piece_size", [None, 1, 7])
async def test_cr_only_line_endings(agent: Agent, piece_size: int | None) -> None:
    reply = text_reply("Caffè ", "è pronto.")
    reply.events = [event.replace(b"\n", b"\r") for event in reply.events]
    reply.piece_size = piece_size
    agent.server.script = [reply]
    result = await agent.ask("Il caffè?", language="it")
    assert speech(result) == "Caffè è pronto."
    await assert_next_question_works(agent, result.conversation_id)


async def test_crlf_line_endings_split_between_cr_and_lf(agent: Agent) -> None:
    reply = text_reply("Hello ", "there.")
    reply.events = [event.replace(b"\n", b"\r\n") for event in reply.events]
    reply.piece_size = 1
    agent.server.script = [reply]
    result = await agent.ask("Hi")
    assert speech(result) == "Hello there."
