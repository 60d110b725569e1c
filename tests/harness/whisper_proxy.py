"""A counting HTTP proxy in front of a real whisper-server.

It passes `POST /inference` and `GET /health` through unchanged and counts
the transcriptions asked for: arrived, answered, and abandoned by the
client before the answer. It can hold each request before passing it on
(`delay`): a slow whisper-server, which no real one is on demand.
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from tests.harness.whisper_server import serve_app


@dataclass
class WhisperProxy:
    """Relays to `upstream` (a whisper-server's URL) and counts `/inference`."""

    upstream: str
    delay: float = 0.0
    arrived: int = 0
    answered: int = 0
    abandoned: int = 0
    url: str = ""
    # Set whenever a request arrives, so a test can act while it is held.
    request_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None

    @property
    def in_flight(self) -> int:
        """Requests arrived and neither answered nor abandoned."""
        return self.arrived - self.answered - self.abandoned

    async def start(self) -> None:
        """Listen on a free loopback port; set `url`."""
        self._session = aiohttp.ClientSession()
        app = web.Application(client_max_size=32 << 20)
        app.router.add_post("/inference", self._inference)
        app.router.add_get("/health", self._health)
        # A client that closes its connection cancels the request's handler,
        # so an abandoned request is seen (and its upstream request ends).
        self._runner, self.url = await serve_app(
            app, handler_cancellation=True, shutdown_timeout=0.1
        )

    async def stop(self) -> None:
        """Stop listening; requests held are cut off, as when a server dies."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _health(self, request: web.Request) -> web.Response:
        assert self._session is not None
        async with self._session.get(f"{self.upstream}/health") as response:
            return web.Response(
                body=await response.read(),
                status=response.status,
                content_type=response.content_type,
            )

    async def _inference(self, request: web.Request) -> web.Response:
        assert self._session is not None
        self.arrived += 1
        self.request_arrived.set()
        try:
            body = await request.read()
            await asyncio.sleep(self.delay)
            async with self._session.post(
                f"{self.upstream}/inference",
                data=body,
                headers={"Content-Type": request.headers["Content-Type"]},
            ) as response:
                answer = web.Response(
                    body=await response.read(),
                    status=response.status,
                    content_type=response.content_type,
                )
        except asyncio.CancelledError:
            self.abandoned += 1
            raise
        self.answered += 1
        return answer


@contextlib.asynccontextmanager
async def proxied(upstream: str, delay: float = 0.0) -> AsyncIterator[WhisperProxy]:
    """A counting proxy to `upstream` on a free loopback port."""
    proxy = WhisperProxy(upstream, delay)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()
