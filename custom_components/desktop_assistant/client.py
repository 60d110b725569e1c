"""Client for llama.cpp's OpenAI-compatible llama-server API."""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
import json
import logging
from typing import Any

import aiohttp

from .const import CONNECT_TIMEOUT

_LOGGER = logging.getLogger(__name__)


class LlamaServerError(Exception):
    """Base class for errors talking to llama-server."""


class CannotConnect(LlamaServerError):
    """The server could not be reached."""


class ServerTimeout(LlamaServerError):
    """The server did not answer in time."""


class InvalidAuth(LlamaServerError):
    """The server refused the API key (401/403)."""


class NotOpenAICompatible(LlamaServerError):
    """The server answered, but not like an OpenAI-compatible API."""


class ServerFailed(LlamaServerError):
    """The server answered a request with an HTTP error or an error event."""

    def __init__(self, message: str, status: int | None = None) -> None:
        """Keep the HTTP status, when there was one, to tell busy from refused."""
        super().__init__(message)
        self.status = status


class StreamCut(LlamaServerError):
    """The stream ended before the server said it was done."""


class UnreadableAnswer(LlamaServerError):
    """The stream held nothing that could be read as a chat completion chunk."""


@dataclass(frozen=True, slots=True)
class LlamaServerClient:
    """An OpenAI-compatible server at `url` (ending in /v1), with an optional key."""

    session: aiohttp.ClientSession
    url: str
    api_key: str | None = None

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
                async with self.session.get(
                    f"{self.url}/models", headers=self.headers
                ) as response:
                    if response.status in (401, 403):
                        raise InvalidAuth
                    if response.status != 200:
                        raise NotOpenAICompatible(f"HTTP {response.status}")
                    body = await response.json(content_type=None)
        except TimeoutError as err:
            raise ServerTimeout from err
        except (aiohttp.ClientConnectionError, aiohttp.InvalidURL) as err:
            raise CannotConnect(str(err)) from err
        except ValueError as err:
            raise NotOpenAICompatible("body is not JSON") from err
        return _model_ids(body)

    async def async_stream_chat(
        self, payload: dict[str, Any], read_timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream `POST {url}/chat/completions`, yielding each chunk as it arrives.

        `read_timeout` bounds the wait for the first byte and for each later
        read, so a server that stalls mid-answer is a timeout too.
        """
        try:
            async with await self._async_post(
                "chat/completions",
                payload,
                aiohttp.ClientTimeout(
                    total=None, sock_connect=CONNECT_TIMEOUT, sock_read=read_timeout
                ),
            ) as response:
                if response.status in (401, 403):
                    raise InvalidAuth
                if response.status != 200:
                    message = _error_message(await response.text())
                    raise ServerFailed(
                        f"HTTP {response.status}: {message}", response.status
                    )
                async for chunk in _chunks(response.content):
                    yield chunk
        except TimeoutError as err:
            raise ServerTimeout(f"no answer within {read_timeout:g} s") from err
        except aiohttp.ClientPayloadError as err:
            raise StreamCut(str(err)) from err
        except (aiohttp.ClientConnectionError, aiohttp.InvalidURL) as err:
            raise CannotConnect(str(err)) from err

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
            _LOGGER.debug("%s closed a kept-alive connection; sending again", url)
            return await self.session.post(
                url, json=payload, headers=self.headers, timeout=limits
            )


async def _chunks(content: aiohttp.StreamReader) -> AsyncIterator[dict[str, Any]]:
    """Parse server-sent events into JSON chunks, until `data: [DONE]`.

    Reads arrive split at arbitrary byte boundaries, so bytes are buffered up
    to each newline before decoding. Comment and keep-alive lines are skipped;
    an event whose data is not JSON is logged and skipped.
    """
    buffer = b""
    data_lines: list[str] = []
    read_any = False
    async for block in content.iter_any():
        buffer += block
        *lines, buffer = buffer.split(b"\n")
        for raw_line in lines:
            line = raw_line.rstrip(b"\r").decode(errors="replace")
            if line.startswith("data:"):
                data_lines.append(line[5:].removeprefix(" "))
                continue
            if line or not data_lines:
                continue  # a comment (":..."), another field, or a stray blank line
            data = "\n".join(data_lines)
            data_lines = []
            if data == "[DONE]":
                if not read_any:
                    raise UnreadableAnswer("the stream held no chat completion chunk")
                return
            try:
                chunk = json.loads(data)
            except ValueError:
                _LOGGER.debug("Skipping an event that is not JSON: %.200r", data)
                continue
            if not isinstance(chunk, dict):
                _LOGGER.debug("Skipping an event that is not an object: %.200r", data)
                continue
            if "error" in chunk:
                raise ServerFailed(_error_message(data))
            read_any = True
            yield chunk
    if read_any:
        raise StreamCut("the stream ended without [DONE]")
    raise UnreadableAnswer("the stream held no chat completion chunk")


def _error_message(body: str) -> str:
    """Return the message of an OpenAI-style error body, else the body's start."""
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return body[:200]
    if isinstance(error, dict):
        return str(error.get("message", error))[:200]
    return str(error)[:200]


def _model_ids(body: Any) -> list[str]:
    """Read the model ids of an OpenAI `GET /models` body: {"data": [{"id": ...}]}."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(
        isinstance(model, dict) and isinstance(model.get("id"), str) for model in data
    ):
        raise NotOpenAICompatible("body has no list of models with ids")
    return [model["id"] for model in data]
