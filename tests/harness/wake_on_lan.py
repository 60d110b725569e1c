"""A Wake-on-LAN receiver on loopback: the UDP socket a sleeping machine's card is."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
from dataclasses import dataclass, field
import time

from tests.harness.llama_server import LlamaServerStandIn


def magic_packet(mac: str) -> bytes:
    """What wakes `mac`: six 0xFF bytes, then the MAC's six bytes sixteen times."""
    return b"\xff" * 6 + bytes.fromhex(mac.replace(":", "").replace("-", "")) * 16


@dataclass
class MagicPacketReceiver(asyncio.DatagramProtocol):
    """Keeps every datagram; calls `on_packet` (once) when the first arrives."""

    on_packet: Callable[[], Awaitable[object]] | None = None
    packets: list[bytes] = field(default_factory=list)
    # time.perf_counter() when each packet arrived.
    received_at: list[float] = field(default_factory=list)
    received: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    woken: asyncio.Task[object] | None = None

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.packets.append(data)
        self.received_at.append(time.perf_counter())
        self.received.set()
        if self.on_packet is not None and self.woken is None:
            self.woken = asyncio.get_running_loop().create_task(self.on_packet())


@contextlib.asynccontextmanager
async def receive_magic_packets(
    on_packet: Callable[[], Awaitable[object]] | None = None,
) -> AsyncIterator[MagicPacketReceiver]:
    """A UDP socket on a free port of 127.0.0.1 (never another address)."""
    receiver = MagicPacketReceiver(on_packet)
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        lambda: receiver, local_addr=("127.0.0.1", 0)
    )
    receiver.port = transport.get_extra_info("sockname")[1]
    try:
        yield receiver
    finally:
        transport.close()
        if receiver.woken is not None:
            with contextlib.suppress(Exception):
                await receiver.woken


@contextlib.asynccontextmanager
async def asleep_until_woken(
    stand_in: LlamaServerStandIn,
) -> AsyncIterator[MagicPacketReceiver]:
    """The stand-in stopped, listening again on its port when a packet arrives."""
    port = stand_in.port
    await stand_in.stop()

    async def wake() -> None:
        await stand_in.start(port)

    async with receive_magic_packets(wake) as receiver:
        yield receiver
