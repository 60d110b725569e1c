"""Client for llama.cpp's OpenAI-compatible llama-server API."""

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp

from .const import CONNECT_TIMEOUT


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


def _model_ids(body: Any) -> list[str]:
    """Read the model ids of an OpenAI `GET /models` body: {"data": [{"id": ...}]}."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(
        isinstance(model, dict) and isinstance(model.get("id"), str) for model in data
    ):
        raise NotOpenAICompatible("body has no list of models with ids")
    return [model["id"] for model in data]
