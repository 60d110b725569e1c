"""A Wyoming tap: a TCP proxy between Home Assistant and a Wyoming server.

It passes every event through unchanged and notes when it passed and which
way, so a test sees what Home Assistant really sent the server (the text it
streamed into TTS, and when) and what came back.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
import contextlib
from dataclasses import dataclass, field
from functools import partial
import time

from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.server import AsyncEventHandler

from tests.harness.wyoming import tcp_server

TO_SERVER = "to server"
FROM_SERVER = "from server"


@dataclass(frozen=True)
class Passed:
    """One event through the tap: perf_counter() time, direction, event."""

    at: float
    direction: str
    event: Event


@dataclass
class Tap:
    """Every event that passed, in order; `on_pass` is told of each."""

    on_pass: Callable[[Passed], None] | None = None
    passed: list[Passed] = field(default_factory=list)

    def add(self, direction: str, event: Event) -> None:
        """Note one event."""
        passed = Passed(time.perf_counter(), direction, event)
        self.passed.append(passed)
        if self.on_pass is not None:
            self.on_pass(passed)

    def of_type(self, event_type: str) -> list[Passed]:
        """The events of one type."""
        return [item for item in self.passed if item.event.type == event_type]

    def clear(self) -> None:
        """Forget what passed so far."""
        self.passed.clear()


class _TapHandler(AsyncEventHandler):
    """One client connection, relayed to its own connection to the server."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        port: int,
        tap: Tap,
    ) -> None:
        super().__init__(reader, writer)
        self._tap = tap
        self._server = AsyncTcpClient("127.0.0.1", port)
        self._relay: asyncio.Task[None] | None = None

    async def handle_event(self, event: Event) -> bool:
        if self._relay is None:
            await self._server.connect()
            self._relay = asyncio.create_task(self._relay_answers())
        self._tap.add(TO_SERVER, event)
        await self._server.write_event(event)
        return True

    async def _relay_answers(self) -> None:
        while (event := await self._server.read_event()) is not None:
            self._tap.add(FROM_SERVER, event)
            await self.write_event(event)

    async def disconnect(self) -> None:
        if self._relay is not None:
            self._relay.cancel()
            # The client may be gone before the server's last answer.
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await self._relay
            await self._server.disconnect()


@contextlib.asynccontextmanager
async def tapped(
    port: int, on_pass: Callable[[Passed], None] | None = None
) -> AsyncIterator[tuple[int, Tap]]:
    """Serve a tap in front of the server at `port`; yield its port and log."""
    tap = Tap(on_pass)
    async with tcp_server(partial(_TapHandler, port=port, tap=tap)) as tap_port:
        yield tap_port, tap
