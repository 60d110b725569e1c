"""Client for llama.cpp's OpenAI-compatible llama-server API."""

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
import json
import logging
import re
from typing import Any, ClassVar

import aiohttp

from ..const import CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT
from ..text import valid_unicode_data
from .credentials import without_credentials
from .reported import MAX_MESSAGE, model_ids, storable_text

_LOGGER = logging.getLogger(__name__)

# The most of an error body or a models list that is read; the rest is dropped.
MAX_ERROR_BODY = 64 * 1024
MAX_MODELS_BODY = 1024 * 1024
# The longest server-sent event line (and event) accepted. A chunk carries a
# token or a few; 1 MiB leaves room for a whole answer in one event.
MAX_EVENT_BYTES = 1024 * 1024
# Statuses that say no server is there to answer now: llama-server loading
# its model, or a proxy in front of a machine that is off or asleep.
UNAVAILABLE_STATUSES = {
    502: "a proxy could not reach the server",
    503: "the model is loading",
    504: "a proxy got no answer from the server",
}
# SSE lines end in CRLF, LF or a lone CR.
LINE_END = re.compile(rb"\r\n|\r|\n")
# A JSON escape of a surrogate (as in \ud800): the event may hold half a pair.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class LlamaServerError(Exception):
    """Base class for errors talking to llama-server.

    `kind` names the fault: the sentence the person hears and the form error
    of the config flow are looked up by it.
    """

    kind: ClassVar[str] = "server_error"


class CannotConnect(LlamaServerError):
    """The server could not be reached."""

    kind = "cannot_connect"


class ServerUnavailable(CannotConnect):
    """The server is not there now: the next server may answer instead.

    Raised before any of the answer: the connection was refused, no response
    headers came within the connect timeout, or the server said 503 (its
    model is still loading).
    """


class ServerTimeout(LlamaServerError):
    """The server did not answer in time."""

    kind = "timeout"


class InvalidAuth(LlamaServerError):
    """The server refused the API key (401/403)."""

    kind = "invalid_auth"


class NotOpenAICompatible(LlamaServerError):
    """The server answered, but not like an OpenAI-compatible API."""

    kind = "server_error"


class ServerFailed(LlamaServerError):
    """The server answered a request with an HTTP error or an error event."""

    kind = "server_error"

    def __init__(self, message: str, status: int | None = None) -> None:
        """Keep the HTTP status, when there was one, to tell busy from refused."""
        super().__init__(message)
        self.status = status


class StreamCut(LlamaServerError):
    """The stream ended before the server said it was done."""

    kind = "stream_cut"


class UnreadableAnswer(LlamaServerError):
    """The stream held nothing that could be read as a chat completion chunk."""

    kind = "unreadable"


@dataclass(frozen=True, slots=True)
class LlamaServerClient:
    """An OpenAI-compatible server at `url` (ending in /v1), with an optional key."""

    session: aiohttp.ClientSession
    url: str
    api_key: str | None = None
    # Seconds a question waits for the response headers of a chat request.
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT

    @property
    def base_url(self) -> str:
        """The server's own URL, where llama-server serves /health and /props."""
        return self.url.removesuffix("/v1")

    @property
    def headers(self) -> dict[str, str]:
        """Request headers, with the bearer token when there is a key."""
        if self.api_key:
            return {"Authorization": f"Bearer {self.api_key}"}
        return {}

    async def async_list_models(self) -> list[str]:
        """Return the model ids the server reports (GET {url}/models)."""
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                text = await self._async_get_text(f"{self.url}/models")
        except TimeoutError as err:
            raise ServerTimeout from err
        return _model_ids(_json_body(text))

    async def async_get_json(self, path: str, within: float | None = None) -> Any:
        """GET one of llama-server's own endpoints (/health, /props) as JSON.

        Raises ServerUnavailable when it is down, silent for `within` seconds
        (the connect timeout unless given) or loading (503); InvalidAuth or
        NotOpenAICompatible when it answers otherwise than llama-server.
        """
        within = self.connect_timeout if within is None else within
        try:
            async with asyncio.timeout(within):
                text = await self._async_get_text(f"{self.base_url}{path}")
        except TimeoutError as err:
            raise ServerUnavailable(f"no answer within {within:g} s") from err
        return _json_body(text)

    async def _async_get_text(self, url: str) -> str:
        """GET `url`; return its body's start as text, or raise a LlamaServerError."""
        try:
            async with self.session.get(url, headers=self.headers) as response:
                if response.status in (401, 403):
                    raise InvalidAuth
                _raise_if_unavailable(response.status)
                if response.status != 200:
                    raise NotOpenAICompatible(f"HTTP {response.status}")
                return await _read_at_most(response.content, MAX_MODELS_BODY)
        except (
            aiohttp.ClientConnectionError,
            aiohttp.ClientPayloadError,
            aiohttp.InvalidURL,
        ) as err:
            raise ServerUnavailable(without_credentials(str(err))) from err
        except aiohttp.ClientError as err:
            # Bytes that are not HTTP, or HTTP that aiohttp cannot parse.
            raise NotOpenAICompatible(f"not an HTTP answer: {err}") from err

    async def async_stream_chat(
        self, payload: dict[str, Any], read_timeout: float, deadline: float | None
    ) -> AsyncIterator[dict[str, Any] | None]:
        """Stream `POST {url}/chat/completions`, yielding each chunk as it arrives.

        An event that is not a JSON object is yielded as None: skipped, but
        the caller knows that part of the answer could not be read.

        `read_timeout` bounds the wait for the first byte and for each later
        read, so a server that stalls mid-answer is a timeout too. `deadline`
        (event loop time) ends the request whatever arrives, so keep-alive
        comments cannot hold a turn forever. aiohttp times only its own
        reads, never the consumer's work between chunks.
        """
        total = (
            None
            if deadline is None
            else max(deadline - asyncio.get_running_loop().time(), 0.001)
        )
        limits = aiohttp.ClientTimeout(
            total=total, sock_connect=CONNECT_TIMEOUT, sock_read=read_timeout
        )
        try:
            async with await self._async_open(payload, limits) as response:
                if response.status in (401, 403):
                    raise InvalidAuth
                if response.status != 200:
                    body = await _read_at_most(response.content, MAX_ERROR_BODY)
                    raise ServerFailed(
                        f"HTTP {response.status}: {_error_message(body)}",
                        response.status,
                    )
                async for chunk in _chunks(response.content):
                    yield chunk
        except TimeoutError as err:
            raise ServerTimeout(
                f"no answer within {read_timeout:g} s, or the turn ran out of time"
            ) from err
        except aiohttp.ClientPayloadError as err:
            raise StreamCut(str(err)) from err
        except (aiohttp.ClientConnectionError, aiohttp.InvalidURL) as err:
            raise CannotConnect(without_credentials(str(err))) from err
        except aiohttp.ClientError as err:
            # Bytes that are not HTTP, or HTTP that aiohttp cannot parse.
            raise NotOpenAICompatible(f"not an HTTP answer: {err}") from err

    # Long: the request, its two timers and the health check beside it share
    # one task's state; apart, they would hand it to each other.
    async def _async_open(
        self, payload: dict[str, Any], limits: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        """Send a chat request; raise ServerUnavailable when another server should.

        Only what happens before the response headers fails over: once the
        server has answered, its faults are its own. llama-server sends its
        headers with the first token, so a long prompt is silent too: a
        `GET /health` sent beside the request tells a busy server (it
        answers, and the question waits for it) from one that is gone.
        """
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        # Asked only of a request still without headers halfway through the
        # connect timeout, and answered by its end.
        half = self.connect_timeout / 2
        alive: asyncio.Future[bool] | None = None
        waiting, silent = True, False

        def ask_health() -> None:
            nonlocal alive
            alive = asyncio.ensure_future(self._async_answers_health(half))

        def give_up(_: object = None) -> None:
            # Called once the connect timeout passed, and again when the
            # health check ends if it had not yet.
            nonlocal silent
            if not waiting or alive is None:
                return
            if not alive.done():
                alive.add_done_callback(give_up)
            elif alive.cancelled() or not alive.result():
                silent = True
                task.cancel()

        timers = (loop.call_later(half, ask_health), loop.call_later(2 * half, give_up))
        try:
            # Awaited in this task: the stream is read as soon as it starts.
            response = await self._async_post("chat/completions", payload, limits)
        except asyncio.CancelledError:
            if silent and task.uncancel() == 0:
                raise ServerUnavailable(
                    f"no response headers within {self.connect_timeout:g} s"
                ) from None
            raise
        except aiohttp.ClientConnectorError as err:
            raise ServerUnavailable(without_credentials(str(err))) from err
        finally:
            waiting = False
            for timer in timers:
                timer.cancel()
            if alive is not None:
                alive.cancel()
        if response.status in UNAVAILABLE_STATUSES:
            response.release()
            _raise_if_unavailable(response.status)
        return response

    async def _async_answers_health(self, within: float) -> bool:
        """Whether the server answers `GET /health` within `within` seconds.

        A server without llama-server's endpoint (a proxy) answers otherwise,
        which counts as alive: only silence, a refusal or a 503 do not.
        """
        try:
            await self.async_get_json("/health", within)
        except ServerUnavailable:
            return False
        except LlamaServerError:
            return True
        return True

    async def _async_post(
        self, path: str, payload: dict[str, Any], limits: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        """POST JSON, sending it once more if a kept-alive connection was dead.

        llama-server may close an idle connection just as it is reused; the
        request then never reached it, so sending it again is safe.
        """
        url = f"{self.url}/{path}"
        try:
            return await self.session.post(
                url, json=payload, headers=self.headers, timeout=limits
            )
        except aiohttp.ServerDisconnectedError:
            _LOGGER.debug(
                "%s closed a kept-alive connection; sending again",
                without_credentials(url),
            )
            return await self.session.post(
                url, json=payload, headers=self.headers, timeout=limits
            )


async def _read_at_most(content: aiohttp.StreamReader, limit: int) -> str:
    """Return up to `limit` bytes of a body as text; undecodable bytes replaced."""
    data = bytearray()
    while len(data) < limit and (block := await content.read(limit - len(data))):
        data += block
    return data.decode(errors="replace")


async def _chunks(
    content: aiohttp.StreamReader,
) -> AsyncIterator[dict[str, Any] | None]:
    """Parse server-sent events into JSON chunks, until `data: [DONE]`."""
    parser = EventParser()
    async for block in content.iter_any():
        for chunk in parser.feed(block):
            yield chunk
        if parser.done:
            return
    for chunk in parser.end():
        yield chunk


class EventParser:
    """Server-sent events in, JSON chunks out, for bytes split anywhere.

    Bytes are buffered up to each line end (CRLF, LF or CR) before decoding.
    Comment and keep-alive lines are skipped; an event whose data is not a
    JSON object is logged and skipped. A line or event over MAX_EVENT_BYTES is
    unreadable, so a line that never ends cannot take all memory.
    """

    def __init__(self) -> None:
        """Start before the first byte."""
        self._buffer = bytearray()
        self._data_lines: list[str] = []
        self._data_size = 0
        self.read_any = False
        self.done = False

    def feed(self, block: bytes) -> Iterator[dict[str, Any] | None]:
        """Yield the chunks that the block completes; raise at an error event.

        Chunks before an error event are yielded first, so their text is kept.
        """
        self._buffer += block
        if b"\n" not in block and b"\r" not in block:
            self._check_size(len(self._buffer))
            return iter(())
        return self._events(self._take_lines(final=False))

    def end(self) -> Iterator[dict[str, Any] | None]:
        """Yield what is left at the end of the body; raise unless it was [DONE]."""
        if not self.done:
            yield from self._events(self._take_lines(final=True))
        if self.done:
            return
        if self.read_any:
            raise StreamCut("the stream ended without [DONE]")
        raise UnreadableAnswer("the stream held no chat completion chunk")

    def _take_lines(self, final: bool) -> list[bytearray]:
        """Return the buffer's complete lines, keeping the rest."""
        buffer = self._buffer
        if b"\r" in buffer:
            # A CR at the end may be the first half of a CRLF: keep it for
            # later, unless the body has ended.
            held = 1 if buffer.endswith(b"\r") and not final else 0
            *lines, rest = LINE_END.split(buffer[: len(buffer) - held])
            rest += buffer[len(buffer) - held :]
        else:
            *lines, rest = buffer.split(b"\n")
        self._buffer = rest
        self._check_size(len(rest))
        return lines

    def _check_size(self, size: int) -> None:
        if size > MAX_EVENT_BYTES:
            raise UnreadableAnswer(f"an event line is over {MAX_EVENT_BYTES} bytes")

    def _events(self, lines: list[bytearray]) -> Iterator[dict[str, Any] | None]:
        """Yield the events the lines complete.

        An event is a chunk, or None for one that is not a JSON object.
        """
        for raw_line in lines:
            if self.done:
                return
            line = raw_line.decode(errors="replace")
            if line.startswith("data:"):
                data = line[5:].removeprefix(" ")
                self._data_size += len(data)
                self._check_size(self._data_size)
                self._data_lines.append(data)
                continue
            if line.startswith("error:"):
                # Older llama-server versions report a failure mid-stream so.
                raise ServerFailed(_error_message(line[6:].strip()))
            if line or not self._data_lines:
                continue  # a comment (":..."), another field, or a stray blank line
            data = "\n".join(self._data_lines)
            self._data_lines = []
            self._data_size = 0
            if data == "[DONE]":
                if not self.read_any:
                    raise UnreadableAnswer("the stream held no chat completion chunk")
                self.done = True
                return
            try:
                chunk = json.loads(data)
                if SURROGATE_ESCAPE.search(data):
                    # Half a pair would break the next request and the record.
                    chunk = valid_unicode_data(chunk)
            except (ValueError, RecursionError):
                _LOGGER.debug("Skipping an event that is not JSON: %.200r", data)
                yield None
                continue
            if not isinstance(chunk, dict):
                _LOGGER.debug("Skipping an event that is not an object: %.200r", data)
                yield None
                continue
            if "error" in chunk:
                raise ServerFailed(_error_message(data))
            self.read_any = True
            yield chunk


def _raise_if_unavailable(status: int) -> None:
    if (why := UNAVAILABLE_STATUSES.get(status)) is not None:
        raise ServerUnavailable(f"HTTP {status}: {why}")


def _json_body(text: str) -> Any:
    """Decode a JSON body; anything else is not llama-server."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise NotOpenAICompatible("body is not JSON") from err


def _error_message(body: str) -> str:
    """Return the message of an OpenAI-style error body, else the body's start."""
    try:
        error = json.loads(body)
    except (ValueError, RecursionError):
        return body[:MAX_MESSAGE]
    if isinstance(error, dict):
        error = error.get("error", error)
    if isinstance(error, dict):
        error = error.get("message", error)
    return storable_text(str(error), MAX_MESSAGE)


def _model_ids(body: Any) -> list[str]:
    """Read the model ids of an OpenAI `GET /models` body, or refuse it."""
    if (ids := model_ids(body)) is None:
        raise NotOpenAICompatible("body has no list of models with ids")
    return ids
