"""Waking a server a question finds asleep, through the agent and the action.

The magic packet goes to a UDP socket on loopback, whose arrival starts the
server again, as a desktop's network card would.
"""

from typing import Any

from homeassistant.const import ATTR_CONFIG_ENTRY_ID
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser

from custom_components.desktop_assistant.const import (
    CONF_CONNECT_TIMEOUT,
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
from tests.harness.llama_server import LlamaServerStandIn, text_reply
from tests.harness.real_engines import LlamaServerOnDemand
from tests.harness.wake_on_lan import magic_packet, receive_magic_packets

MAC = "5c:60:ba:1e:22:7f"
WAKING = "One moment, I'm waking the desktop."


def wake_options(port: int, wait: float) -> dict[str, Any]:
    """The Server page: a MAC, a loopback Wake-on-LAN port, a 1 s connect timeout."""
    return {
        CONF_WAKE_MAC: MAC,
        CONF_WAKE_ADDRESS: "127.0.0.1",
        CONF_WAKE_PORT: port,
        CONF_WAKE_WAIT: wait,
        CONF_CONNECT_TIMEOUT: 1,
    }


def contents(pieces: list[str]) -> Any:
    """A delta listener keeping each piece of text, in order."""
    return lambda _log, delta: (
        pieces.append(delta["content"]) if delta.get("content") else None
    )


async def test_a_question_that_finds_its_server_stopped_wakes_it_and_waits(
    hass: HomeAssistant, sleeping_llama_server: LlamaServerOnDemand
) -> None:
    await sleeping_llama_server.async_start()
    async with receive_magic_packets(sleeping_llama_server.async_start) as receiver:
        entry, agent_id = await async_add_server(
            hass,
            sleeping_llama_server.url,
            str(sleeping_llama_server.workdir / "tiny-chatml.gguf"),
            options=wake_options(receiver.port, wait=60),
        )
        # Up when set up; stopped just before the question, unknown to health.
        assert entry.runtime_data.health.reachable is True
        await hass.async_add_executor_job(sleeping_llama_server.stop)
        pieces: list[str] = []
        result = await async_ask(
            hass, agent_id, "Good morning", listener=contents(pieces)
        )
        assert receiver.packets == [magic_packet(MAC)]
        assert pieces[0] == WAKING
        assert answered_by()["server"] == entry.title
        assert not speech(result).startswith("Sorry")


async def test_a_reload_during_the_wait_is_followed(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    """The waiting question watches the reloaded entry, not its stopped health.

    The wait is an hour: were the old health watched, the test's own
    timeout would end it.
    """
    port = llama_server.port
    await llama_server.stop()
    entries: list[MockConfigEntry] = []

    async def reload_then_wake() -> None:
        await hass.config_entries.async_reload(entries[0].entry_id)
        await llama_server.start(port)

    async with receive_magic_packets(reload_then_wake) as receiver:
        entry, agent_id = await async_add_server(
            hass, llama_server.url, "big", options=wake_options(receiver.port, 3600)
        )
        entries.append(entry)
        old_runtime = entry.runtime_data
        llama_server.script = [text_reply("From the desktop.")]
        pieces: list[str] = []
        result = await async_ask(hass, agent_id, "Hello", listener=contents(pieces))
        assert entry.runtime_data is not old_runtime
        assert receiver.packets == [magic_packet(MAC)]
        assert pieces == [WAKING, "From the desktop."]
        assert speech(result) == "From the desktop."
        assert entry.runtime_data.health.reachable is True


async def test_a_reload_that_removes_the_entry_ends_the_wait_with_the_fault(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    await llama_server.stop()
    entries: list[MockConfigEntry] = []

    async def remove() -> None:
        await hass.config_entries.async_remove(entries[0].entry_id)

    async with receive_magic_packets(remove) as receiver:
        entry, agent_id = await async_add_server(
            hass, llama_server.url, "big", options=wake_options(receiver.port, 3600)
        )
        entries.append(entry)
        result = await async_ask(hass, agent_id, "Hello")
        assert receiver.packets == [magic_packet(MAC)]
        assert speech(result).startswith("Sorry")


async def test_wake_server_is_for_administrators(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    hass_read_only_user: MockUser,
    hass_admin_user: MockUser,
) -> None:
    async with receive_magic_packets() as receiver:
        entry, _ = await async_add_server(
            hass, llama_server.url, "big", options=wake_options(receiver.port, 0)
        )

        async def wake(user: MockUser) -> Any:
            return await hass.services.async_call(
                DOMAIN,
                SERVICE_WAKE_SERVER,
                {ATTR_CONFIG_ENTRY_ID: entry.entry_id},
                blocking=True,
                return_response=True,
                context=Context(user_id=user.id),
            )

        with pytest.raises(Unauthorized):
            await wake(hass_read_only_user)
        await hass.async_block_till_done()
        assert receiver.packets == []
        assert await wake(hass_admin_user) == {"sent": True}
        await receiver.received.wait()
        assert receiver.packets == [magic_packet(MAC)]
