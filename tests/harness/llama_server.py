"""A local stand-in for llama.cpp's llama-server, speaking its HTTP wire format.

`GET /v1/models` answers with the body llama-server sends in single-model
mode: an Ollama-style `models` list next to the OpenAI `object`/`data` list,
each OpenAI entry carrying llama-server's `meta` block.

`POST /v1/chat/completions` plays scripted replies as llama-server streams
them: `data: <chunk>` events of `chat.completion.chunk` objects, the first
delta carrying the role, tool calls as `delta.tool_calls` fragments with an
`index` (id, type and name in the first fragment, arguments in pieces), a
last chunk with `finish_reason`, `usage` and `timings`, then `data: [DONE]`.
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
from dataclasses import dataclass, field
import json
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


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """Return one `chat.completion.chunk` as llama-server streams it."""
    return {
        "choices": [{"finish_reason": finish_reason, "index": 0, "delta": delta}],
        "created": int(time.time()),
        "id": "chatcmpl-4Hq3fZx2kP9sYq1uV7wJmA0bN5cD8eR6",
        "model": MODEL_ID,
        "system_fingerprint": "b6820-2a1b4c9d",
        "object": "chat.completion.chunk",
    }


def final_chunk(
    finish_reason: str, cache_n: int = 0, prompt_n: int = 42
) -> dict[str, Any]:
    """Return the last chunk: finish reason, usage and llama-server's timings."""
    last = chunk({}, finish_reason)
    last["usage"] = {
        "completion_tokens": 7,
        "prompt_tokens": cache_n + prompt_n,
        "total_tokens": cache_n + prompt_n + 7,
    }
    last["timings"] = {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": 35.2,
        "prompt_per_token_ms": 35.2 / prompt_n,
        "prompt_per_second": prompt_n / 0.0352,
        "predicted_n": 7,
        "predicted_ms": 70.4,
        "predicted_per_token_ms": 10.06,
        "predicted_per_second": 99.4,
    }
    return last


def sse(payload: dict[str, Any] | str) -> bytes:
    """Return one server-sent event as llama-server writes it."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


@dataclass
class Reply:
    """One scripted answer to `POST /v1/chat/completions`."""

    events: list[bytes] = field(default_factory=list)
    status: int = 200
    # Body of a non-200 answer: JSON, or bytes sent as they are.
    body: dict[str, Any] | bytes | None = None
    # A bytes body is sent this many times over (a huge body, streamed).
    body_repeat: int = 1
    # Bytes written to the socket instead of any HTTP answer, then closed.
    raw: bytes | None = None
    # After the events, this is written every `trickle_every` seconds for as
    # long as the client listens (keep-alive comments, say).
    trickle: bytes | None = None
    trickle_every: float = 0.05
    # After the events, the connection stays open this many seconds.
    hold: float = 0.0
    # Seconds before the first byte.
    delay: float = 0.0
    # Close the connection after the events, without `[DONE]`.
    cut: bool = False
    # Write the stream in pieces of this many bytes (split anywhere); by
    # default each event is its own write, as llama-server sends each token.
    piece_size: int | None = None


def text_reply(*pieces: str, thinking: str | None = None, **kwargs: Any) -> Reply:
    """A streamed text answer, one content delta per piece."""
    events = [sse(chunk({"role": "assistant", "content": None}))]
    if thinking:
        events.append(sse(chunk({"reasoning_content": thinking})))
    events += [sse(chunk({"content": piece})) for piece in pieces]
    events += [sse(final_chunk("stop")), sse("[DONE]")]
    return Reply(events=events, **kwargs)


def json_reply(
    reply: dict[str, Any] | str, size: int = 3, finish: str = "stop"
) -> Reply:
    """The reply's JSON text streamed `size` characters a token, as a grammar writes it."""
    text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
    events = [sse(chunk({"role": "assistant", "content": None}))]
    events += [
        sse(chunk({"content": text[start : start + size]}))
        for start in range(0, len(text), size)
    ]
    events += [sse(final_chunk(finish)), sse("[DONE]")]
    return Reply(events=events)


def label_reply(label: str, top_logprobs: Any, cache_n: int = 0) -> Reply:
    """A one-token answer with its `top_logprobs` (token: logprob, or a raw list).

    As llama-server streams a request with `logprobs`: the token's chunk
    carries `logprobs.content`, one entry per token.
    """
    if isinstance(top_logprobs, dict):
        top_logprobs = [
            {"id": index, "token": token, "bytes": list(token.encode()), "logprob": p}
            for index, (token, p) in enumerate(top_logprobs.items())
        ]
    token = chunk({"content": label})
    token["choices"][0]["logprobs"] = {
        "content": [
            {
                "id": 0,
                "token": label,
                "bytes": list(label.encode()),
                "logprob": -0.1,
                "top_logprobs": top_logprobs,
            }
        ]
    }
    return Reply(
        events=[
            sse(chunk({"role": "assistant", "content": None})),
            sse(token),
            sse(final_chunk("stop", cache_n=cache_n)),
            sse("[DONE]"),
        ]
    )


def tool_call_reply(
    *calls: tuple[str, str], fragments: int = 1, text: str | None = None
) -> Reply:
    """Tool calls (name, JSON arguments), each argument string in `fragments` pieces."""
    events = [sse(chunk({"role": "assistant", "content": None}))]
    if text:
        events.append(sse(chunk({"content": text})))
    for index, (name, arguments) in enumerate(calls):
        events.append(
            sse(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": f"call_{index}_{name}",
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
        )
        size = -(-len(arguments) // fragments) or 1
        for start in range(0, len(arguments), size):
            piece = arguments[start : start + size]
            events.append(
                sse(
                    chunk(
                        {
                            "tool_calls": [
                                {"index": index, "function": {"arguments": piece}}
                            ]
                        }
                    )
                )
            )
    events += [sse(final_chunk("tool_calls")), sse("[DONE]")]
    return Reply(events=events)


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
    # Answers to chat requests, in order (or coroutine functions returning
    # one when the request arrives), and the JSON bodies they answered.
    script: list[Reply | Callable[[], Awaitable[Reply]]] = field(default_factory=list)
    # Answers a request (its JSON body) once the script is used up.
    reply_to: Callable[[dict[str, Any]], Reply] | None = None
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    # time.perf_counter() when each streamed answer's first and last bytes went out.
    stream_times: list[tuple[float, float]] = field(default_factory=list)
    # time.perf_counter() when each chat request arrived.
    received_at: list[float] = field(default_factory=list)
    # What `GET /props` reports as the server's parallel slots.
    total_slots: int = 1
    # Whether `GET /props` reports a template that can call tools; None: not said.
    template_calls_tools: bool | None = None
    # What `GET /props` reports of the model: whether it sees images.
    vision: bool = False
    # Unset: no `GET /props` (404), as an OpenAI server that is not llama-server.
    has_props: bool = True
    # `GET /health`'s status: 200 with the model loaded, 503 while it loads.
    health_status: int = 200
    # Set: `GET /health` never answers either (a machine going to sleep).
    health_silent: bool = False
    # Set when a chat request arrives; tests clear it to wait for the next.
    chat_received: asyncio.Event = field(default_factory=asyncio.Event)
    # Bytes of each streamed error body written before the client left.
    body_bytes_sent: list[int] = field(default_factory=list)
    # Set when the stand-in stops, so that delayed answers end at once.
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None

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

    async def handle_props(self, request: web.Request) -> web.StreamResponse:
        """Answer `GET /props` like llama-server (the fields clients read)."""
        self.requests.append(request)
        if not self.has_props:
            raise web.HTTPNotFound
        return web.json_response(
            {
                "total_slots": self.total_slots,
                "model_path": self.model_id,
                "modalities": {"vision": self.vision, "audio": False},
                "chat_template": "",
                "build_info": "b6820-2a1b4c9d",
            }
            | (
                {}
                if self.template_calls_tools is None
                else {
                    "chat_template_caps": {
                        "supports_tool_calls": self.template_calls_tools
                    }
                }
            )
        )

    async def handle_health(self, request: web.Request) -> web.StreamResponse:
        """Answer `GET /health` like llama-server: ok, or 503 while loading."""
        self.requests.append(request)
        if self.health_silent:
            await self.stopping.wait()
        if self.health_status == 503:
            return web.json_response(
                error_body(503, "Loading model", "unavailable_error"), status=503
            )
        return web.json_response({"status": "ok"}, status=self.health_status)

    async def handle_chat(self, request: web.Request) -> web.StreamResponse:
        """Answer `POST /v1/chat/completions` with the next scripted reply."""
        self.received_at.append(time.perf_counter())
        self.requests.append(request)
        self.chat_requests.append(await request.json())
        self.chat_received.set()
        if not self._authorized(request):
            return web.json_response(
                error_body(401, "Invalid API Key", "authentication_error"), status=401
            )
        if not self.script and self.reply_to is not None:
            self.script.append(self.reply_to(self.chat_requests[-1]))
        if not self.script:
            return web.json_response(
                error_body(
                    500, "the test's script has no more replies", "server_error"
                ),
                status=500,
            )
        reply = self.script.pop(0)
        if not isinstance(reply, Reply):
            # Computed when the request arrives, from what the test sees then.
            reply = await reply()
        await self._wait(reply.delay)
        if reply.raw is not None:
            assert request.transport is not None
            request.transport.write(reply.raw)
            request.transport.close()
            # The handler ends without an HTTP answer; aiohttp writes none.
            raise asyncio.CancelledError
        if isinstance(reply.body, bytes):
            return await self._stream_body(request, reply)
        if reply.status != 200:
            return web.json_response(reply.body, status=reply.status)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        if reply.piece_size:
            data = b"".join(reply.events)
            pieces = [
                data[start : start + reply.piece_size]
                for start in range(0, len(data), reply.piece_size)
            ]
        else:
            pieces = reply.events
        first_byte_at = time.perf_counter()
        for piece in pieces:
            await response.write(piece)
        self.stream_times.append((first_byte_at, time.perf_counter()))
        if reply.trickle is not None:
            with contextlib.suppress(ConnectionError):
                while not self.stopping.is_set():
                    await response.write(reply.trickle)
                    await self._wait(reply.trickle_every)
            return response
        if reply.hold:
            await self._wait(reply.hold)
        if reply.cut:
            # Drop the connection with the chunked body unfinished.
            assert request.transport is not None
            request.transport.close()
            return response
        await response.write_eof()
        return response

    async def _stream_body(
        self, request: web.Request, reply: Reply
    ) -> web.StreamResponse:
        """Send a bytes body `body_repeat` times, until the client goes away."""
        assert isinstance(reply.body, bytes)
        response = web.StreamResponse(
            status=reply.status, headers={"Content-Type": "text/plain"}
        )
        await response.prepare(request)
        sent = 0
        try:
            for _ in range(reply.body_repeat):
                await response.write(reply.body)
                sent += len(reply.body)
            await response.write_eof()
        except ConnectionError:
            pass
        finally:
            self.body_bytes_sent.append(sent)
        return response

    async def start(self, port: int = 0) -> None:
        """Listen on a loopback port (a free one when 0); set `url`."""
        self.stopping.clear()
        self._runner = web.AppRunner(self.app(), shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"

    async def stop(self) -> None:
        """Stop listening, ending delayed answers at once."""
        self.stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def port(self) -> int:
        """The port of `url`."""
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def app(self) -> web.Application:
        """Return the aiohttp application serving the stand-in's routes."""
        app = web.Application()
        app.router.add_get("/v1/models", self.handle_models)
        app.router.add_post("/v1/chat/completions", self.handle_chat)
        app.router.add_get("/props", self.handle_props)
        app.router.add_get("/health", self.handle_health)
        return app


@contextlib.asynccontextmanager
async def serve(stand_in: LlamaServerStandIn) -> AsyncIterator[LlamaServerStandIn]:
    """Serve the stand-in on a free loopback port; its `url` ends in /v1."""
    await stand_in.start()
    try:
        yield stand_in
    finally:
        await stand_in.stop()
