"""Whatever answers at the URL, the config flow shows a form error.

Servers here are real sockets: something that does not speak HTTP, an HTTP
answer with a body that is not UTF-8 or is 200 MB, and a client session that
fails in a way nobody planned for, which the flow calls `unknown`.
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
import time

from homeassistant import config_entries
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.llama_server import LlamaServerStandIn

type Answer = Callable[[asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_server(answer: Answer) -> AsyncIterator[str]:
    """Serve `answer` to every connection on a loopback port; yield its /v1 URL."""

    async def handle(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(ConnectionError):
            await reader.readuntil(b"\r\n\r\n")
            await answer(writer)
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()


async def not_http(writer: asyncio.StreamWriter) -> None:
    writer.write(b"SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n")
    await writer.drain()


def http_body(status: str, body: bytes, repeat: int = 1) -> Answer:
    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) * repeat}\r\n\r\n".encode()
        )
        for _ in range(repeat):
            writer.write(body)
            await writer.drain()

    return answer


MEGABYTE = b"[" * (1024 * 1024)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        pytest.param(not_http, "not_openai_compatible", id="not-http"),
        pytest.param(
            http_body("200 OK", b'{"data": [{"id": "\xff\xfe"}]'),
            "not_openai_compatible",
            id="not-utf8",
        ),
        pytest.param(
            http_body("500 Internal Server Error", b"\xc3\x28\xff"),
            "not_openai_compatible",
            id="error-not-utf8",
        ),
        pytest.param(
            http_body("200 OK", MEGABYTE, repeat=200),
            "not_openai_compatible",
            id="200-mb-body",
        ),
    ],
)
async def test_user_flow_with_a_hostile_server(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    answer: Answer,
    error: str,
) -> None:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    async with raw_server(answer) as url:
        started = time.perf_counter()
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: url}
        )
        assert time.perf_counter() - started < 10
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": error}

    # The person gives the right URL: the same flow goes on.
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama_server.url}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_unexpected_failure_is_unknown(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    # A closed client session raises RuntimeError, which no code plans for.
    session = async_get_clientsession(hass)
    assert session.connector is not None
    await session.connector.close()
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama_server.url}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "unknown"}


@pytest.mark.parametrize(
    ("answer", "key", "reason"),
    [
        pytest.param(
            not_http,
            "setup_not_openai_compatible",
            "The server at this entry's URL is not an OpenAI-compatible server: ",
            id="not-http",
        ),
        pytest.param(
            http_body("401 Unauthorized", b'{"error": "no"}'),
            "setup_invalid_auth",
            "llama-server refused the API key",
            id="refused-key",
        ),
    ],
)
async def test_setup_failures_are_translated(
    hass: HomeAssistant,
    socket_enabled: None,
    answer: Answer,
    key: str,
    reason: str,
) -> None:
    async with raw_server(answer) as url:
        entry = MockConfigEntry(domain=DOMAIN, data={CONF_URL: url})
        entry.add_to_hass(hass)
        await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.SETUP_ERROR
    assert entry.error_reason_translation_key == key
    assert entry.reason is not None
    assert entry.reason.startswith(reason)


async def test_adding_an_agent_when_the_session_fails_aborts_unknown(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    session = async_get_clientsession(hass)
    assert session.connector is not None
    await session.connector.close()
    result = await hass.config_entries.subentries.async_init(
        (config_entry.entry_id, "conversation"), context={"source": "user"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "unknown"
