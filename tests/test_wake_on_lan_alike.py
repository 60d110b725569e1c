"""The integration's and the whisper relay's Wake-on-LAN are one behaviour.

The relay is a pip-installed package and the integration is installed on
its own (HACS), so neither imports the other: the relay's package ships the
integration's `wake_on_lan` file (pyproject.toml). One interval; a packet
counts as sent only once it was sent, so a send that fails is tried again
at once.
"""

from collections.abc import Awaitable, Callable
import inspect

from homeassistant.core import HomeAssistant

from custom_components.desktop_assistant import wake_on_lan
from custom_components.desktop_assistant.server.wake import Waker as ServerWaker
import desktop_assistant_wake_on_lan as relay
from tests.harness.wake_on_lan import magic_packet, receive_magic_packets
from wyoming_services.whisper import __main__ as relay_main, servers

MAC = "5c:60:ba:1e:22:7f"
# Five bytes: the send fails (a ValueError) before any packet goes out.
UNSENDABLE = "5c:60:ba:1e:22"


def test_the_relay_wakes_with_the_integrations_file() -> None:
    assert inspect.getsource(relay) == inspect.getsource(wake_on_lan)
    assert relay_main.Waker is relay.Waker
    assert servers.Waker is relay.Waker
    assert issubclass(ServerWaker, wake_on_lan.Waker)


async def wakers(
    hass: HomeAssistant, port: int
) -> dict[str, tuple[object, Callable[[], Awaitable[bool]]]]:
    """Each waker, with a MAC it cannot send to, and how to wake with it."""
    server = ServerWaker(hass, UNSENDABLE, "127.0.0.1", port)
    whisper = relay.Waker(UNSENDABLE, "127.0.0.1", port)

    async def relay_wake() -> bool:
        return await hass.async_add_executor_job(whisper.wake)

    return {"integration": (server, server.async_wake), "relay": (whisper, relay_wake)}


async def test_sent_only_once_sent_then_once_per_interval(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    async with receive_magic_packets() as receiver:
        for name, (waker, wake) in (await wakers(hass, receiver.port)).items():
            receiver.packets.clear()
            receiver.received.clear()
            assert await wake() is False, name
            # The failed send did not count: the next one goes out.
            waker.mac = MAC  # type: ignore[attr-defined]
            assert await wake() is True, name
            await receiver.received.wait()
            assert receiver.packets == [magic_packet(MAC)], name
            # Within the interval nothing more is sent.
            assert await wake() is False, name
            await hass.async_block_till_done()
            assert len(receiver.packets) == 1, name
