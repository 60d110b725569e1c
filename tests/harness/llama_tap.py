"""A recording pass-through in front of a real llama-server.

Every request goes on to the server unchanged and its answer comes back
unchanged, streamed as it arrives; the tap keeps each chat request's JSON
body, the `timings` of each streamed answer and how long it took, so that
tests and benchmarks can say what reached llama-server and how much of each
prompt came from its cache.
"""

from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass, field
import json
import time
from typing import Any

import aiohttp
from aiohttp import web

# Headers that describe one hop's connection, not the message.
HOP_HEADERS = frozenset(
    {"connection", "content-length", "transfer-encoding", "keep-alive", "host"}
)


@dataclass
class LlamaTap:
    """What passed: each chat request's body and each answer's timings."""

    upstream: str
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    # Per chat request: the answer's last timings ({} without), and the
    # seconds from the request's arrival to the answer's last byte.
    timings: list[dict[str, Any]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Pass the request on; stream the answer back, noting what it said."""
        started = time.perf_counter()
        body = await request.read()
        chat = request.path.endswith("/chat/completions")
        if chat:
            self.chat_requests.append(json.loads(body))
        headers = {
            k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS
        }
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method,
                self.upstream + request.path_qs,
                data=body,
                headers=headers,
            ) as upstream,
        ):
            response = web.StreamResponse(status=upstream.status)
            response.content_type = upstream.content_type
            await response.prepare(request)
            pending, seen = b"", [{}]
            # A client may hang up once it has read `[DONE]`, before the end
            # of the chunked body: the answer is still read to its end.
            with contextlib.suppress(ConnectionResetError):
                async for block in upstream.content.iter_any():
                    if chat:
                        pending = timings_in(pending + block, seen)
                    await response.write(block)
                await response.write_eof()
        if chat:
            self.seconds.append(time.perf_counter() - started)
            # llama-server sends timings in more than one chunk: the last counts.
            self.timings.append(seen[-1])
        return response


def timings_in(data: bytes, seen: list[dict[str, Any]]) -> bytes:
    """Add the timings of each whole `data:` line to `seen`; return the unfinished rest."""
    *lines, rest = data.split(b"\n")
    for line in lines:
        if not line.startswith(b"data: {"):
            continue
        with contextlib.suppress(ValueError):
            if isinstance(timings := json.loads(line[6:]).get("timings"), dict):
                seen.append(timings)
    return rest


@contextlib.asynccontextmanager
async def tapped(upstream: str) -> AsyncIterator[LlamaTap]:
    """A tap on a loopback port in front of `upstream`; its `url` ends in /v1, as that one's."""
    tap = LlamaTap(upstream.removesuffix("/v1"))
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", tap.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    _, port = runner.addresses[0][:2]
    tap.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield tap
    finally:
        await runner.cleanup()
