"""Checking a server typed into the config flow: its models, and its template.

A server answers with its model list; llama-server's `GET /props` then says
whether its chat template can call tools (None from a proxy without it).
"""

from dataclasses import dataclass, field
import logging

from homeassistant.const import CONF_API_KEY, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.selector import (
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
import probatio as vol
from yarl import URL

from ..const import DEFAULT_URL
from .client import LlamaServerClient, LlamaServerError
from .credentials import without_credentials
from .reported import server_props

_LOGGER = logging.getLogger(__name__)

# The form error for each kind of fault checking the server can end in
# (LlamaServerError.kind); any other failure is `unknown`.
FORM_ERRORS: dict[str, str] = {
    "cannot_connect": "cannot_connect",
    "timeout": "timeout_connect",
    "invalid_auth": "invalid_auth",
    "server_error": "not_openai_compatible",
}

SERVER_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_URL, default=DEFAULT_URL): TextSelector(
            TextSelectorConfig(type=TextSelectorType.URL)
        ),
        vol.Optional(CONF_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        ),
    }
)
REAUTH_SCHEMA = vol.Schema(
    {
        vol.Optional(CONF_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        )
    }
)


@dataclass(frozen=True, slots=True)
class CheckedServer:
    """What checking a server found: its models, or the form's errors.

    `tool_calls` is what its `/props` says of its template (None: not said).
    """

    models: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    tool_calls: bool | None = None


def server_data(url: str, api_key: str | None) -> dict[str, str]:
    """Return entry data for a server; the key only when there is one."""
    return {CONF_URL: url} | ({CONF_API_KEY: api_key} if api_key else {})


async def async_check_server(
    hass: HomeAssistant, url: str, api_key: str | None
) -> CheckedServer:
    """Return the server's models and tool calling, or the form's errors."""
    try:
        cv.url(url)
        has_credentials = URL(url).user is not None
    except (vol.Invalid, ValueError):
        # urlparse and yarl raise ValueError (UnicodeError too) on a host
        # such as "[::1" or "x[::1]".
        return CheckedServer(errors={CONF_URL: "invalid_url"})
    if api_key and has_credentials:
        # aiohttp refuses a request that carries both.
        return CheckedServer(errors={CONF_API_KEY: "key_and_url_credentials"})
    client = LlamaServerClient(async_get_clientsession(hass), url, api_key)
    try:
        models = await client.async_list_models()
    except LlamaServerError as err:
        _LOGGER.debug("Checking failed: %s", without_credentials(f"{url}: {err!r}"))
        return CheckedServer(errors={"base": FORM_ERRORS.get(err.kind, "unknown")})
    except Exception:
        _LOGGER.exception("Unexpected error checking %s", without_credentials(url))
        return CheckedServer(errors={"base": "unknown"})
    try:
        props = server_props(await client.async_get_json("/props"))
    except LlamaServerError as err:
        _LOGGER.debug("No /props at %s: %s", without_credentials(url), err.kind)
        return CheckedServer(models=models)
    return CheckedServer(models=models, tool_calls=props.tool_calls)
