"""Chat's websocket commands against the agent on the llama-server stand-in."""

from datetime import timedelta
import logging
from typing import Any

from homeassistant.components.websocket_api import ActiveConnection
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import Unauthorized
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.runtime import DATA_CHAT
from tests.harness.agent import Agent
from tests.harness.llama_server import (
    Reply,
    chunk,
    sse,
    text_reply,
    tool_call_reply,
)

from ..record.conftest import seed
from .conftest import ClientOf, command, events_until_end, subscribe


def endless_reply(text: str) -> Reply:
    """The answer's first words, then the model goes on until the turn is stopped."""
    return Reply(
        events=[
            sse(chunk({"role": "assistant", "content": None})),
            sse(chunk({"content": text})),
        ],
        trickle=b": still here\n\n",
    )


async def start_thread(client: Any, agent: Agent, text: str) -> str:
    """A new thread of the client's user with a first message; its id."""
    reply = await command(client, "send", agent_id=agent.entity_id, text=text)
    assert reply["success"], reply
    return reply["result"]["thread_id"]


async def test_a_turn_streams_its_answer_and_a_tool_call_settles(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script += [
        tool_call_reply(("weather", '{"place": "Rome"}')),
        text_reply("It is ", "clear in Rome.", thinking="Look it up first."),
    ]
    client = await hass_ws_client(hass)
    agents = await command(client, "agents")
    assert agents["result"]["agents"] == [
        {"agent_id": agent.entity_id, "name": hass.states.get(agent.entity_id).name}
    ]
    thread_id = await start_thread(client, agent, "Weather in Rome?")
    await subscribe(client, thread_id)
    events = await events_until_end(client)

    assert events[0] == {"type": "start", "text": "Weather in Rome?"}
    calls = [e for e in events if "tool_calls" in e]
    assert [c["tool_calls"][0]["tool_name"] for c in calls] == ["weather"]
    assert calls[0]["tool_calls"][0]["arguments"] == {"place": "Rome"}
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["tool_name"], r["result"], r["error"]) for r in results] == [
        ("weather", "Rome: clear sky, 18 °C", False)
    ]
    # The call settles before the answer is written, and the answer streams.
    texts = [e["content"] for e in events if e.get("content")]
    assert texts == ["It is ", "clear in Rome."]
    assert events.index(results[0]) < events.index(
        next(e for e in events if e.get("content"))
    )
    assert any(e.get("thinking") == "Look it up first." for e in events)
    assert events[-1]["type"] == "end"
    assert events[-1]["speech"] == "It is clear in Rome."

    thread = (await command(client, "get", thread_id=thread_id))["result"]
    assert [e["kind"] for e in thread["entries"]] == ["user", "tool_call", "assistant"]
    assert thread["entries"][1]["result"] == "Rome: clear sky, 18 °C"
    assert thread["entries"][2]["model"]
    assert thread["title"] == "Weather in Rome?"
    assert thread["in_progress"] is False
    # Reasoning is shown, never stored.
    assert "Look it up" not in str(thread)
    listed = (await command(client, "list"))["result"]["threads"]
    assert [t["thread_id"] for t in listed] == [thread_id]


async def test_a_turn_finishes_without_anyone_listening(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    """Closing the page (its connection) leaves the turn running; it is recorded."""
    agent.server.script.append(text_reply("Still ", "answered.", delay=0.3))
    client = await hass_ws_client(hass)
    thread_id = await start_thread(client, agent, "A long question")
    await subscribe(client, thread_id)
    await client.close()
    await hass.async_block_till_done()

    other = await hass_ws_client(hass)
    thread = (await command(other, "get", thread_id=thread_id))["result"]
    assert [(e["kind"], e.get("text")) for e in thread["entries"]] == [
        ("user", "A long question"),
        ("assistant", "Still answered."),
    ]


async def test_a_page_listening_after_the_turn_ended_hears_idle(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    """A page that read the turn as running, then listened after it ended, reads again."""
    agent.server.script.append(text_reply("Done."))
    client = await hass_ws_client(hass)
    thread_id = await start_thread(client, agent, "Quick one")
    await hass.async_block_till_done()
    assert not hass.data[DATA_CHAT].running

    await subscribe(client, thread_id)
    message = await client.receive_json()
    assert message["event"] == {"type": "idle"}
    thread = (await command(client, "get", thread_id=thread_id))["result"]
    assert thread["in_progress"] is False
    assert [e["kind"] for e in thread["entries"]] == ["user", "assistant"]


async def test_a_page_opened_mid_turn_gets_what_it_missed(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script.append(endless_reply("First words"))
    client = await hass_ws_client(hass)
    thread_id = await start_thread(client, agent, "Tell me")
    await subscribe(client, thread_id)
    while (await client.receive_json())["event"].get("content") != "First words":
        pass

    reloaded = await hass_ws_client(hass)
    thread = (await command(reloaded, "get", thread_id=thread_id))["result"]
    assert thread["in_progress"] is True
    await subscribe(reloaded, thread_id)
    assert (await command(client, "stop", thread_id=thread_id))["success"]
    events = await events_until_end(reloaded)
    assert events[0] == {"type": "start", "text": "Tell me"}
    assert "".join(e.get("content", "") for e in events) == "First words"
    assert events[-1] == {"type": "end", "stopped": True}
    await hass.async_block_till_done()
    thread = (await command(reloaded, "get", thread_id=thread_id))["result"]
    # Stopped: the record keeps the question, what was streamed of the
    # answer (interrupted) and why it ended.
    entries = [
        (e["kind"], e.get("text"), e.get("fault"), e.get("interrupted"))
        for e in thread["entries"]
    ]
    assert entries == [
        ("user", "Tell me", None, None),
        ("assistant", "First words", None, True),
        ("fault", None, "cancelled", None),
    ]


@pytest.mark.parametrize("forgotten", [False, True])
async def test_a_threads_next_turn_carries_its_tool_calls_and_results(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any, forgotten: bool
) -> None:
    """Unlike a voice conversation's, a Chat thread keeps what it looked up.

    When Home Assistant forgot the thread, its history is rebuilt from the record.
    """
    agent.server.script += [
        tool_call_reply(("weather", '{"place": "Rome"}')),
        text_reply("Clear in Rome."),
        text_reply("Yes, take sunglasses."),
    ]
    client = await hass_ws_client(hass)
    thread_id = await start_thread(client, agent, "Weather in Rome?")
    await hass.async_block_till_done()
    if forgotten:
        # Home Assistant forgets a chat log five minutes after its last message.
        async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=6))
        await hass.async_block_till_done()
        assert agent.chat_log(thread_id)[1:] == []

    reply = await command(client, "send", thread_id=thread_id, text="Sunglasses?")
    assert reply["success"], reply
    await hass.async_block_till_done()

    log = agent.chat_log(thread_id)
    roles = [item.role for item in log]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool_result",
        "assistant",
        "user",
        "assistant",
    ]
    assert log[3].result.data == {"result": "Rome: clear sky, 18 °C"}
    assert log[2].tool_calls[0].tool_args == {"place": "Rome"}
    # The model is asked with the thread's earlier turn, its tool result too.
    messages = agent.server.chat_requests[-1]["messages"]
    assert [m["role"] for m in messages[1:5]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert messages[1]["content"] == "Weather in Rome?"
    assert messages[3]["content"] == "Rome: clear sky, 18 °C"
    assert messages[4]["content"] == "Clear in Rome."
    assert messages[-1]["content"].startswith("Sunglasses?")
    thread = (await command(client, "get", thread_id=thread_id))["result"]
    assert [e["kind"] for e in thread["entries"]] == [
        "user",
        "tool_call",
        "assistant",
        "user",
        "assistant",
    ]


async def test_bad_requests_are_refused_with_their_codes(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script.append(endless_reply("Slowly"))
    client = await hass_ws_client(hass)

    async def refused(**fields: Any) -> str:
        reply = await command(client, "send", **fields)
        assert not reply["success"], reply
        return reply["error"]["code"]

    assert await refused(agent_id=agent.entity_id, text=" \n ") == "empty_message"
    too_long = "é" * 50_001  # 100,002 bytes of UTF-8
    assert await refused(agent_id=agent.entity_id, text=too_long) == (
        "message_too_long"
    )
    assert await refused(thread_id="chat-nothing", text="Hi") == "not_found"
    assert await refused(agent_id="conversation.other", text="Hi") == "unknown_agent"
    await seed(
        hass, "voice-1", dt_util.utcnow().timestamp(), "Hi", "Hello", channel="voice"
    )
    assert await refused(thread_id="voice-1", text="Hi") == "voice_conversation"
    reply = await command(client, "get", thread_id="voice-1")
    assert reply["error"]["code"] == "voice_conversation"

    thread_id = await start_thread(client, agent, "First")
    assert await refused(thread_id=thread_id, text="Second") == "in_progress"
    stopped = await command(client, "stop", thread_id=thread_id)
    assert stopped["result"] == {"stopped": True}
    await hass.async_block_till_done()
    thread = (await command(client, "get", thread_id=thread_id))["result"]
    assert thread["in_progress"] is False
    assert thread["entries"][0]["text"] == "First"
    assert thread["entries"][-1]["kind"] == "fault"


async def test_a_member_reaches_only_their_own_threads(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any, member_client: ClientOf
) -> None:
    agent.server.script += [text_reply("Pasta."), text_reply("Soup.")]
    anna = await member_client("Anna")
    bruno = await member_client("Bruno")
    annas = await start_thread(anna, agent, "Dinner ideas?")
    await hass.async_block_till_done()
    brunos = await start_thread(bruno, agent, "Lunch ideas?")
    await hass.async_block_till_done()

    listed = (await command(bruno, "list"))["result"]["threads"]
    assert [t["thread_id"] for t in listed] == [brunos]
    assert (await command(bruno, "list", query="dinner"))["result"]["threads"] == []
    for type_, fields in (
        ("get", {}),
        ("send", {"text": "Mine now"}),
        ("stop", {}),
    ):
        reply = await command(bruno, type_, thread_id=annas, **fields)
        assert reply["error"]["code"] == "not_found", (type_, reply)
    await bruno.send_json_auto_id(
        {"type": f"{DOMAIN}/chat/subscribe", "thread_id": annas}
    )
    assert (await bruno.receive_json())["error"]["code"] == "not_found"
    # Every other command of the integration stays an administrator's.
    member = await hass.auth.async_create_user("Carla", group_ids=["system-users"])
    connection = ActiveConnection(
        logging.getLogger(__name__), hass, lambda _message: None, member, None, None
    )
    others = [
        (type_, handler)
        for type_, (handler, _schema) in hass.data["websocket_api"].items()
        if type_.startswith(f"{DOMAIN}/") and not type_.startswith(f"{DOMAIN}/chat/")
    ]
    assert len(others) > 20
    for type_, handler in others:
        with pytest.raises(Unauthorized):
            handler(hass, connection, {"id": 1, "type": type_})
    # Anna finds her own thread by its words; an admin may read it.
    found = (await command(anna, "list", query="dinner"))["result"]["threads"]
    assert [t["thread_id"] for t in found] == [annas]
    admin = await hass_ws_client(hass)
    read = (await command(admin, "get", thread_id=annas))["result"]
    assert read["own"] is False
    assert [e.get("text") for e in read["entries"]] == ["Dinner ideas?", "Pasta."]
    # ...but not continue it as her.
    reply = await command(admin, "send", thread_id=annas, text="Hello")
    assert reply["error"]["code"] == "not_found"


async def test_a_fault_after_streamed_text_is_an_interrupted_answer(
    hass: HomeAssistant, agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script += [
        Reply(
            events=[
                sse(chunk({"role": "assistant", "content": None})),
                sse(chunk({"content": "Half an"})),
            ],
            cut=True,
        ),
        text_reply("Whole answer."),
    ]
    client = await hass_ws_client(hass)
    thread_id = await start_thread(client, agent, "Tell me everything")
    await subscribe(client, thread_id)
    events = await events_until_end(client)
    assert events[-1]["type"] == "end"
    await hass.async_block_till_done()
    thread = (await command(client, "get", thread_id=thread_id))["result"]
    assert [(e["kind"], e.get("interrupted")) for e in thread["entries"]] == [
        ("user", None),
        ("assistant", True),
        ("fault", None),
    ]
    assert thread["entries"][1]["text"] == "Half an"
    # The next message works (sent from another page: this one hears events).
    sender = await hass_ws_client(hass)
    reply = await command(sender, "send", thread_id=thread_id, text="Again?")
    assert reply["success"], reply
    assert (await events_until_end(client))[-1]["speech"] == "Whole answer."
