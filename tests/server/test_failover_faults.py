"""What fails over and what does not, with servers a real one cannot be made into.

A stand-in primary answers 503 or 500, or takes the request and never sends
the response headers; the fallback is a stand-in that counts its requests.
"""

import asyncio
from collections.abc import AsyncIterator
import time

from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
import pytest

from custom_components.desktop_assistant.const import CONF_CONNECT_TIMEOUT
from tests.harness.agent import speech
from tests.harness.agent_entry import async_ask
from tests.harness.failover import answered_by, async_add_server
from tests.harness.llama_server import (
    LlamaServerStandIn,
    Reply,
    error_body,
    serve,
    text_reply,
)
from tests.harness.ports import closed_port_url

CONNECT_TIMEOUT = 0.5
CANNOT_CONNECT = "Sorry, I can't reach the language model server right now."


@pytest.fixture
async def fallback_server(socket_enabled: None) -> AsyncIterator[LlamaServerStandIn]:
    """The always-on box's server: a second stand-in, with a model of its own."""
    async with serve(LlamaServerStandIn(model_id="qwen3-1.7b-q8_0.gguf")) as stand_in:
        yield stand_in


async def agent_with_fallback(
    hass: HomeAssistant, primary: LlamaServerStandIn, fallback: LlamaServerStandIn
) -> str:
    """The primary's agent, falling back to the fallback; short connect timeouts."""
    options = {CONF_CONNECT_TIMEOUT: CONNECT_TIMEOUT}
    fallback_entry, _ = await async_add_server(
        hass, fallback.url, fallback.model_id, options=options
    )
    _, agent_id = await async_add_server(
        hass, primary.url, primary.model_id, fallbacks=[fallback_entry], options=options
    )
    return agent_id


async def test_503_fails_over_silently(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    fallback_server: LlamaServerStandIn,
) -> None:
    agent_id = await agent_with_fallback(hass, llama_server, fallback_server)
    llama_server.script = [
        Reply(status=503, body=error_body(503, "Loading model", "unavailable_error"))
    ]
    fallback_server.script = [text_reply("From ", "the box.")]
    result = await async_ask(hass, agent_id, "Hello")
    assert speech(result) == "From the box."
    assert answered_by()["model"] == fallback_server.model_id
    # The fallback was asked for its own model.
    assert fallback_server.chat_requests[-1]["model"] == fallback_server.model_id


# What nginx answers for a machine behind it that is off, or does not answer.
BAD_GATEWAY = (
    b"<html><head><title>{status} Bad Gateway</title></head><body>"
    b"<center><h1>{status} Bad Gateway</h1></center><hr><center>nginx</center>"
    b"</body></html>"
)


@pytest.mark.parametrize("status", [502, 504])
async def test_a_proxy_whose_server_is_off_fails_over_silently(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    fallback_server: LlamaServerStandIn,
    status: int,
) -> None:
    agent_id = await agent_with_fallback(hass, llama_server, fallback_server)
    body = BAD_GATEWAY.replace(b"{status}", str(status).encode())
    llama_server.script = [Reply(status=status, body=body)]
    fallback_server.script = [text_reply("From ", "the box.")]
    result = await async_ask(hass, agent_id, "Hello")
    assert speech(result) == "From the box."
    assert answered_by()["model"] == fallback_server.model_id


async def test_500_is_a_fault_and_does_not_fail_over(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    fallback_server: LlamaServerStandIn,
) -> None:
    agent_id = await agent_with_fallback(hass, llama_server, fallback_server)
    llama_server.script = [
        Reply(status=500, body=error_body(500, "out of memory", "server_error"))
    ]
    result = await async_ask(hass, agent_id, "Hello")
    assert speech(result) == "Sorry, the language model server reported an error."
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert fallback_server.chat_requests == []
    # The next question works, on the primary.
    llama_server.script = [text_reply("Better now.")]
    assert speech(await async_ask(hass, agent_id, "Again")) == "Better now."


async def test_a_cut_stream_after_text_does_not_fail_over(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    fallback_server: LlamaServerStandIn,
) -> None:
    agent_id = await agent_with_fallback(hass, llama_server, fallback_server)
    reply = text_reply("The answer is")
    reply.events = reply.events[:-2]
    reply.cut = True
    llama_server.script = [reply]
    result = await async_ask(hass, agent_id, "Hello")
    assert speech(result).startswith("The answer is\n\nSorry, my connection")
    assert fallback_server.chat_requests == []


async def test_silent_primary_the_fallback_answers_after_the_connect_timeout(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    fallback_server: LlamaServerStandIn,
) -> None:
    agent_id = await agent_with_fallback(hass, llama_server, fallback_server)
    # Takes the request, never answers anything (a machine going to sleep).
    llama_server.script = [text_reply("too late", delay=60)]
    llama_server.health_silent = True
    fallback_server.script = [text_reply("Here I am.")]
    began = time.monotonic()
    result = await async_ask(hass, agent_id, "Hello")
    waited = time.monotonic() - began
    assert speech(result) == "Here I am."
    assert waited >= CONNECT_TIMEOUT
    # Generous: the connect timeout plus the fallback's own (tiny) time.
    assert waited < CONNECT_TIMEOUT + 20


async def test_all_down_says_so_within_the_connect_timeouts(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    fallback_server: LlamaServerStandIn,
) -> None:
    agent_id = await agent_with_fallback(hass, llama_server, fallback_server)
    for server in (llama_server, fallback_server):
        server.script = [text_reply("too late", delay=60)]
        server.health_silent = True
    began = time.monotonic()
    result = await async_ask(hass, agent_id, "Hello")
    waited = time.monotonic() - began
    assert speech(result) == CANNOT_CONNECT
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert 2 * CONNECT_TIMEOUT <= waited < 2 * CONNECT_TIMEOUT + 20
    assert answered_by() is None


async def test_all_refused_says_so_at_once(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    fallback, _ = await async_add_server(hass, closed_port_url("/v1"), "small")
    _, agent_id = await async_add_server(
        hass, closed_port_url("/v1"), "big", fallbacks=[fallback]
    )
    began = time.monotonic()
    result = await async_ask(hass, agent_id, "Hello")
    assert speech(result) == CANNOT_CONNECT
    assert time.monotonic() - began < 5


async def test_a_busy_primary_that_answers_health_is_waited_for(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    fallback_server: LlamaServerStandIn,
) -> None:
    """A long prompt: no headers within the connect timeout, but /health answers."""
    agent_id = await agent_with_fallback(hass, llama_server, fallback_server)
    llama_server.script = [text_reply("Worth the wait.", delay=CONNECT_TIMEOUT * 4)]
    result = await async_ask(hass, agent_id, "Hello")
    assert speech(result) == "Worth the wait."
    assert fallback_server.chat_requests == []
    assert any(request.path == "/health" for request in llama_server.requests)


async def test_a_reload_of_the_entry_while_it_answers_still_answers(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    """Editing an option reloads the entry; a question it is answering goes on."""
    entry, agent_id = await async_add_server(hass, llama_server.url, "big")
    mid_reload = asyncio.Event()

    async def answer_during_the_reload() -> Reply:
        await mid_reload.wait()
        return text_reply("Still here.")

    llama_server.script = [answer_during_the_reload]
    asking = hass.async_create_task(async_ask(hass, agent_id, "Hello"))
    await asyncio.wait_for(llama_server.chat_received.wait(), 20)
    # The reload's first check waits out its connect timeout, as on a server
    # going to sleep; until then the entry has no runtime data.
    llama_server.health_silent = True
    reloading = hass.async_create_task(hass.config_entries.async_reload(entry.entry_id))
    for _ in range(2000):
        if not hasattr(entry, "runtime_data"):
            break
        await asyncio.sleep(0.01)
    assert not hasattr(entry, "runtime_data")
    mid_reload.set()
    result = await asyncio.wait_for(asking, 20)
    assert speech(result) == "Still here."
    llama_server.health_silent = False
    assert await reloading
