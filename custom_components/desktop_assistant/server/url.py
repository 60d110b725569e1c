"""One spelling of a server's address, so that one server makes one entry.

`http://localhost:8181`, `http://LOCALHOST:8181/v1/` and
`http://localhost:8181/v1` are the same llama-server API; the config flow
stores and compares this one form.
"""

from collections.abc import Iterable
from typing import Any

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import CONF_API_KEY, CONF_URL
from homeassistant.data_entry_flow import AbortFlow
from yarl import URL

DEFAULT_PORTS = {"http": 80, "https": 443}
API_PATH = "/v1"


def normalised_server_url(typed: str) -> str:
    """Return the OpenAI API base of what a person typed.

    Scheme and host in lower case, a default port left out, no trailing
    slash, and `/v1` added to a bare host (llama-server's API lives there).
    A path the person gave, such as a proxy's, is kept. Text that is no
    URL comes back stripped, for the form's own check to refuse.
    """
    text = typed.strip().rstrip("/")
    try:
        url = URL(text)
    except (ValueError, TypeError):
        return text
    if url.scheme.lower() not in DEFAULT_PORTS or not url.host:
        return text
    if url.explicit_port == DEFAULT_PORTS[url.scheme.lower()]:
        url = url.with_port(None)
    if url.raw_path in ("", "/"):
        url = url.with_path(API_PATH)
    return str(url).rstrip("/")


def typed_server(user_input: dict[str, Any]) -> tuple[str, str | None]:
    """Return a form's normalised URL and its key (None when blank)."""
    api_key = (user_input.get(CONF_API_KEY) or "").strip() or None
    return normalised_server_url(user_input[CONF_URL]), api_key


def abort_if_added(
    entries: Iterable[ConfigEntry], url: str, keep: ConfigEntry | None = None
) -> None:
    """Abort the flow when another entry has this server, however it was typed.

    Entries added before URLs were normalised are compared in normal form too.
    """
    for entry in entries:
        if entry is not keep and normalised_server_url(entry.data[CONF_URL]) == url:
            raise AbortFlow("already_configured")
