"""A pass-through in front of a real llama-server that keeps each chat request's body.

The engine answers; the tap only forwards, byte for byte, streamed answers
included, so a test asserts on exactly what Home Assistant sent.
"""

from collections.abc import AsyncIterator
import contextlib
import json
from typing import Any

import aiohttp
from aiohttp import web

# What the tap passes on of a request's headers.
FORWARDED_HEADERS = ("Content-Type", "Authorization", "Accept")


class LlamaServerTap:
    """Forwards every request to `upstream` (a URL ending in /v1)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removesuffix("/v1")
        self.chat_requests: list[dict[str, Any]] = []
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """Listen on a free loopback port; set `url`."""
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"
        self._session = aiohttp.ClientSession()

    async def stop(self) -> None:
        """Stop listening and forwarding."""
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.path.endswith("/chat/completions"):
            self.chat_requests.append(json.loads(body))
        headers = {
            name: request.headers[name]
            for name in FORWARDED_HEADERS
            if name in request.headers
        }
        assert self._session is not None
        async with self._session.request(
            request.method, self.upstream + request.path_qs, data=body, headers=headers
        ) as answer:
            response = web.StreamResponse(status=answer.status)
            response.content_type = answer.content_type
            await response.prepare(request)
            async for piece in answer.content.iter_any():
                await response.write(piece)
            await response.write_eof()
            return response


@contextlib.asynccontextmanager
async def tapped(upstream: str) -> AsyncIterator[LlamaServerTap]:
    """A tap on a free loopback port in front of `upstream`; its `url` ends in /v1."""
    tap = LlamaServerTap(upstream)
    await tap.start()
    try:
        yield tap
    finally:
        await tap.stop()
