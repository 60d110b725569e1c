"""Wake-on-LAN: the magic packet to a UDP socket on loopback, and the woken server.

The helper starts the primary llama-server when the packet arrives, as a
desktop's network card would; `wake_address` is 127.0.0.1, never another.
"""

from collections.abc import Callable
from typing import Any

from homeassistant.const import ATTR_CONFIG_ENTRY_ID
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
import pytest

from custom_components.desktop_assistant.const import (
    CONF_PREFER_OWN_SERVER,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_MAC,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
    DOMAIN,
    SERVICE_WAKE_SERVER,
)
from tests.harness.agent import speech
from tests.harness.agent_entry import async_ask
from tests.harness.failover import answered_by, async_add_server
from tests.harness.llama_server import LlamaServerStandIn, serve, text_reply
from tests.harness.ports import closed_port_url
from tests.harness.real_engines import LlamaServerOnDemand
from tests.harness.wake_on_lan import (
    asleep_until_woken,
    magic_packet,
    receive_magic_packets,
)

MAC = "5c:60:ba:1e:22:7f"
WAKING = "One moment, I'm waking the desktop."
PREFER_OWN = {CONF_PREFER_OWN_SERVER: True}


async def wake(hass: HomeAssistant, entry_id: str) -> dict[str, object] | None:
    """Call the wake_server action; return its response."""
    return await hass.services.async_call(
        DOMAIN,
        SERVICE_WAKE_SERVER,
        {ATTR_CONFIG_ENTRY_ID: entry_id},
        blocking=True,
        return_response=True,
    )


def wake_options(port: int, wait: float = 0) -> dict[str, object]:
    """The Server page's options, waking through a loopback port."""
    return {
        CONF_WAKE_MAC: MAC,
        CONF_WAKE_ADDRESS: "127.0.0.1",
        CONF_WAKE_PORT: port,
        CONF_WAKE_WAIT: wait,
    }


async def test_a_question_wakes_the_desktop_and_waits_for_it(
    hass: HomeAssistant,
    socket_enabled: None,
    sleeping_llama_server: LlamaServerOnDemand,
) -> None:
    async with receive_magic_packets(sleeping_llama_server.async_start) as receiver:
        entry, agent_id = await async_add_server(
            hass,
            sleeping_llama_server.url,
            str(sleeping_llama_server.workdir / "tiny-chatml.gguf"),
            options=wake_options(receiver.port, wait=120),
        )
        assert entry.runtime_data.health.reachable is False
        # Setting up sends nothing: only a question (or the action) wakes.
        assert receiver.packets == []
        pieces: list[str] = []
        result = await async_ask(
            hass,
            agent_id,
            "Good morning",
            listener=lambda _log, delta: (
                pieces.append(delta["content"]) if delta.get("content") else None
            ),
        )
        assert receiver.packets == [magic_packet(MAC)]
        assert pieces[0] == WAKING
        assert answered_by()["server"] == entry.title
        assert not speech(result).startswith("Sorry")

        # Once within 30 s: the action now sends nothing.
        response = await wake(hass, entry.entry_id)
        assert response == {"sent": False}
        assert len(receiver.packets) == 1


async def test_with_a_fallback_up_the_question_does_not_wait(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    async with receive_magic_packets() as receiver:
        fallback, _ = await async_add_server(hass, llama_server.url, "small")
        _, agent_id = await async_add_server(
            hass,
            closed_port_url("/v1"),
            "big",
            fallbacks=[fallback],
            options=wake_options(receiver.port, wait=120),
        )
        llama_server.script = [text_reply("From the box."), text_reply("Again.")]
        result = await async_ask(hass, agent_id, "Hello")
        assert speech(result) == "From the box."
        await receiver.received.wait()
        assert receiver.packets == [magic_packet(MAC)]
        # A second question within 30 s sends no second packet.
        assert speech(await async_ask(hass, agent_id, "Hello?")) == "Again."
        await hass.async_block_till_done()
        assert len(receiver.packets) == 1


def content_of(pieces: list[str]) -> Callable[[object, dict[str, Any]], None]:
    """A delta listener that keeps each piece of text, in order."""
    return lambda _log, delta: (
        pieces.append(delta["content"]) if delta.get("content") else None
    )


async def test_preferring_its_own_server_the_agent_waits_for_it_with_a_fallback_up(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    async with (
        serve(LlamaServerStandIn(model_id="small")) as box,
        asleep_until_woken(llama_server) as receiver,
    ):
        fallback, _ = await async_add_server(hass, box.url, "small")
        assert fallback.runtime_data.health.reachable is True
        entry, agent_id = await async_add_server(
            hass,
            llama_server.url,
            "big",
            fallbacks=[fallback],
            options=wake_options(receiver.port, wait=120),
            agent_options=PREFER_OWN,
        )
        assert entry.runtime_data.health.reachable is False
        llama_server.script = [text_reply("From the desktop.")]
        box.script = [text_reply("From the box.")]
        pieces: list[str] = []
        result = await async_ask(
            hass, agent_id, "Good morning", listener=content_of(pieces)
        )
        assert receiver.packets == [magic_packet(MAC)]
        assert pieces == [WAKING, "From the desktop."]
        assert speech(result) == "From the desktop."
        assert answered_by() == {"server": entry.title, "model": "big"}
        assert box.chat_requests == []


async def test_preferring_its_own_server_the_fallback_answers_if_it_stays_asleep(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    async with receive_magic_packets() as receiver:
        fallback, _ = await async_add_server(hass, llama_server.url, "small")
        _, agent_id = await async_add_server(
            hass,
            closed_port_url("/v1"),
            "big",
            fallbacks=[fallback],
            options=wake_options(receiver.port, wait=1),
            agent_options=PREFER_OWN,
        )
        llama_server.script = [text_reply("From the box.")]
        pieces: list[str] = []
        result = await async_ask(hass, agent_id, "Hello", listener=content_of(pieces))
        assert receiver.packets == [magic_packet(MAC)]
        assert pieces == [WAKING, "From the box."]
        assert speech(result) == "From the box."
        assert answered_by() == {"server": fallback.title, "model": "small"}


async def test_preferring_its_own_server_with_none_up_the_fault_sentence(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    async with receive_magic_packets() as receiver:
        _, agent_id = await async_add_server(
            hass,
            closed_port_url("/v1"),
            "big",
            options=wake_options(receiver.port, wait=1),
            agent_options=PREFER_OWN,
        )
        pieces: list[str] = []
        result = await async_ask(hass, agent_id, "Hello", listener=content_of(pieces))
        assert receiver.packets == [magic_packet(MAC)]
        assert pieces[0] == WAKING
        assert speech(result).startswith("Sorry")


async def test_the_wake_action(hass: HomeAssistant, socket_enabled: None) -> None:
    async with receive_magic_packets() as receiver:
        entry, _ = await async_add_server(
            hass, closed_port_url("/v1"), "big", options=wake_options(receiver.port)
        )
        plain, _ = await async_add_server(hass, closed_port_url("/v1"), "small")
        response = await wake(hass, entry.entry_id)
        assert response == {"sent": True}
        await receiver.received.wait()
        assert receiver.packets == [magic_packet(MAC)]

        with pytest.raises(ServiceValidationError) as caught:
            await wake(hass, plain.entry_id)
        assert caught.value.translation_key == "no_wake_mac"
        with pytest.raises(ServiceValidationError):
            await wake(hass, "not-an-entry; rm -rf /")
        assert len(receiver.packets) == 1


async def test_the_waking_sentence_is_in_the_language_asked(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    async with asleep_until_woken(llama_server) as receiver:
        _, agent_id = await async_add_server(
            hass,
            llama_server.url,
            "big",
            options=wake_options(receiver.port, wait=60),
        )
        llama_server.script = [text_reply("Buongiorno!")]
        pieces: list[str] = []
        result = await async_ask(
            hass,
            agent_id,
            "Buongiorno",
            listener=lambda _log, delta: (
                pieces.append(delta["content"]) if delta.get("content") else None
            ),
            language="it",
        )
        assert pieces == ["Un momento, sto accendendo il computer.", "Buongiorno!"]
        assert speech(result) == "Buongiorno!"
