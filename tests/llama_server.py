"""A local stand-in for llama.cpp's llama-server, speaking its HTTP wire format.

`GET /v1/models` answers with the body llama-server sends in single-model
mode: an Ollama-style `models` list next to the OpenAI `object`/`data` list,
each OpenAI entry carrying llama-server's `meta` block.
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass, field
import time
from typing import Any

from aiohttp import web

MODEL_ID = "gemma-3-12b-it-Q4_K_M.gguf"


def models_body(model_id: str = MODEL_ID) -> dict[str, Any]:
    """Return llama-server's `GET /v1/models` body for one loaded model."""
    return {
        "models": [
            {
                "name": model_id,
                "model": model_id,
                "modified_at": "",
                "size": "",
                "digest": "",
                "type": "model",
                "description": "",
                "tags": [""],
                "capabilities": ["completion"],
                "parameters": "",
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "",
                    "families": [""],
                    "parameter_size": "",
                    "quantization_level": "",
                },
            }
        ],
        "object": "list",
        "data": [
            {
                "id": model_id,
                "object": "model",
                "created": int(time.time()),
                "owned_by": "llamacpp",
                "meta": {
                    "vocab_type": 2,
                    "n_vocab": 262144,
                    "n_ctx_train": 131072,
                    "n_embd": 3840,
                    "n_params": 11765788416,
                    "size": 7300574976,
                },
            }
        ],
    }


def error_body(code: int, message: str, error_type: str) -> dict[str, Any]:
    """Return llama-server's error body."""
    return {"error": {"code": code, "message": message, "type": error_type}}


@dataclass
class LlamaServerStandIn:
    """What the stand-in answers; tests change these fields between requests."""

    model_id: str = MODEL_ID
    api_key: str | None = None
    # Replaces the models answer: (status, body text, content type).
    models_override: tuple[int, str, str] | None = None
    # Seconds to wait before answering anything.
    delay: float = 0.0
    requests: list[web.Request] = field(default_factory=list)
    url: str = ""
    # Set when the stand-in stops, so that delayed answers end at once.
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    async def _wait(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    def _authorized(self, request: web.Request) -> bool:
        return self.api_key is None or (
            request.headers.get("Authorization") == f"Bearer {self.api_key}"
        )

    async def handle_models(self, request: web.Request) -> web.StreamResponse:
        """Answer `GET /v1/models` like llama-server."""
        self.requests.append(request)
        await self._wait(self.delay)
        if not self._authorized(request):
            return web.json_response(
                error_body(401, "Invalid API Key", "authentication_error"), status=401
            )
        if self.models_override is not None:
            status, text, content_type = self.models_override
            return web.Response(status=status, text=text, content_type=content_type)
        return web.json_response(models_body(self.model_id))

    def app(self) -> web.Application:
        """Return the aiohttp application serving the stand-in's routes."""
        app = web.Application()
        app.router.add_get("/v1/models", self.handle_models)
        return app


@contextlib.asynccontextmanager
async def serve(stand_in: LlamaServerStandIn) -> AsyncIterator[LlamaServerStandIn]:
    """Serve the stand-in on a free loopback port; its `url` ends in /v1."""
    runner = web.AppRunner(stand_in.app(), shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    stand_in.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield stand_in
    finally:
        stand_in.stopping.set()
        await runner.cleanup()
