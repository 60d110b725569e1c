"""A fault is one answer: after streamed text it follows, before any it is the error.

Home Assistant's Assist dialog shows the streamed text of a turn in one
bubble and an error response as a red bubble of its own after it; its final
response replaces nothing that was already streamed. So a fault after text
the person saw ends that answer, a paragraph apart, as a normal response,
and only a fault before any text is an error response. Either way
`speech_slots` names the fault. Checked through the REST API and through
an Assist pipeline run over the websocket, as the dialog runs it.
"""

from typing import Any

from homeassistant.helpers import intent

from tests.harness.agent import Agent, run_text_pipeline
from tests.harness.llama_server import (
    Reply,
    error_body,
    text_reply,
    tool_call_reply,
)

CUT = "Sorry, my connection to the language model was cut off."
SERVER_ERROR = "Sorry, the language model server reported an error."


def cut_after(*pieces: str) -> Reply:
    """A reply streaming `pieces`, then the connection cut."""
    return Reply(events=text_reply(*pieces).events[:-2], cut=True)


def server_error() -> Reply:
    return Reply(status=500, body=error_body(500, "out of memory", "server_error"))


async def process(agent: Agent, hass_client: Any, text: str) -> dict[str, Any]:
    """Ask through `POST /api/conversation/process`; return its JSON answer."""
    client = await hass_client()
    answered = await client.post(
        "/api/conversation/process",
        json={"text": text, "agent_id": agent.entity_id, "language": "en"},
    )
    assert answered.status == 200
    return await answered.json()


def assistant_messages(events: list[dict[str, Any]]) -> list[str]:
    """The text of each assistant message streamed, split where a role starts."""
    messages: list[str] = []
    role = None
    for event in events:
        if event["type"] != "intent-progress":
            continue
        if not (delta := event["data"].get("chat_log_delta")):
            continue
        if "role" in delta:
            role = delta["role"]
            if role == "assistant":
                messages.append("")
        if role == "assistant" and delta.get("content"):
            messages[-1] += delta["content"]
    return messages


def response_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    (end,) = [event for event in events if event["type"] == "intent-end"]
    return end["data"]["intent_output"]["response"]


async def test_rest_fault_after_text_is_one_answer(
    agent: Agent, hass_client: Any
) -> None:
    agent.server.script = [cut_after("The weather in Rome ", "is sunny and")]

    answer = await process(agent, hass_client, "Weather in Rome?")

    response = answer["response"]
    assert response["speech"]["plain"]["speech"] == (
        f"The weather in Rome is sunny and\n\n{CUT}"
    )
    assert response["response_type"] == "action_done"
    assert response["speech_slots"] == {"fault": "stream_cut"}
    agent.server.script = [text_reply("Hello again.")]
    again = await process(agent, hass_client, "Hello")
    assert again["response"]["speech"]["plain"]["speech"] == "Hello again."
    assert "speech_slots" not in again["response"]


async def test_rest_fault_before_text_is_an_error(
    agent: Agent, hass_client: Any
) -> None:
    agent.server.script = [server_error()]

    answer = await process(agent, hass_client, "Hello?")

    response = answer["response"]
    assert response["speech"]["plain"]["speech"] == SERVER_ERROR
    assert response["response_type"] == "error"
    assert response["data"] == {"code": intent.IntentResponseErrorCode.FAILED_TO_HANDLE}
    assert response["speech_slots"] == {"fault": "server_error"}
    agent.server.script = [text_reply("I'm here.")]
    again = await process(agent, hass_client, "Hello?")
    assert again["response"]["response_type"] == "action_done"


async def test_pipeline_fault_after_text_streams_one_message(
    agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script = [cut_after("Partial ", "answer.")]

    events = await run_text_pipeline(
        agent.hass, hass_ws_client, agent.entity_id, "Tell me"
    )

    assert "error" not in [event["type"] for event in events]
    # One message: the dialog's bubble ends with the fault sentence, and the
    # final response is that message, so nothing is added to it.
    assert assistant_messages(events) == [f"Partial answer.\n\n{CUT}"]
    response = response_of(events)
    assert response["response_type"] == "action_done"
    assert response["speech"]["plain"]["speech"] == f"Partial answer.\n\n{CUT}"
    assert response["speech_slots"] == {"fault": "stream_cut"}


async def test_pipeline_fault_before_text_streams_nothing(
    agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script = [server_error(), text_reply("Back.")]

    events = await run_text_pipeline(
        agent.hass, hass_ws_client, agent.entity_id, "Hello?"
    )

    # Nothing in the dialog's bubble before the error fills it, once.
    assert assistant_messages(events) == [""]
    response = response_of(events)
    assert response["response_type"] == "error"
    assert response["speech"]["plain"]["speech"] == SERVER_ERROR
    assert response["data"] == {"code": "failed_to_handle"}

    events = await run_text_pipeline(
        agent.hass, hass_ws_client, agent.entity_id, "Hello?"
    )
    assert assistant_messages(events) == ["Back."]
    assert response_of(events)["response_type"] == "action_done"


async def test_pipeline_fault_after_an_earlier_rounds_text(
    agent: Agent, hass_ws_client: Any
) -> None:
    """Text before a tool call, then a fault: the sentence is the next message."""
    agent.server.script = [
        tool_call_reply(("GetDateTime", "{}"), text="Let me look."),
        server_error(),
    ]

    events = await run_text_pipeline(
        agent.hass, hass_ws_client, agent.entity_id, "What time is it?"
    )

    assert assistant_messages(events) == ["Let me look.", SERVER_ERROR]
    response = response_of(events)
    # The final response is the last message, already streamed: no red bubble.
    assert response["response_type"] == "action_done"
    assert response["speech"]["plain"]["speech"] == SERVER_ERROR
    assert response["speech_slots"] == {"fault": "server_error"}
    assert agent.time.calls == [{}]
