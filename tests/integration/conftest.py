"""Fixtures for tests of the integration inside Home Assistant."""

from collections.abc import AsyncIterator, Iterator
import json
from pathlib import Path
import socket
from typing import Any

from homeassistant.const import CONF_API_KEY, CONF_MODEL, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowManager, FlowResultType
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.config_flow import DEFAULT_AGENT_OPTIONS
from custom_components.desktop_assistant.const import DOMAIN

from ..llama_server import MODEL_ID, LlamaServerStandIn, serve

API_KEY = "sk-test-5f0c2e9a7b"
TRANSLATIONS = (
    Path(__file__).parents[2]
    / "custom_components"
    / DOMAIN
    / "translations"
    / "en.json"
)


def closed_port_url() -> str:
    """Return a loopback URL nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(autouse=True)
async def custom_integrations(
    hass: HomeAssistant, enable_custom_integrations: None
) -> None:
    """Let Home Assistant load this repository's integration.

    The `conversation` component needs HA's core component set up first, as
    it is in a running Home Assistant.
    """
    assert await async_setup_component(hass, "homeassistant", {})


@pytest.fixture
async def llama_server(socket_enabled: None) -> AsyncIterator[LlamaServerStandIn]:
    """A llama-server stand-in on a loopback port."""
    async with serve(LlamaServerStandIn()) as stand_in:
        yield stand_in


@pytest.fixture
def config_entry(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> MockConfigEntry:
    """An entry for the stand-in, with a key and one conversation agent."""
    llama_server.api_key = API_KEY
    entry = MockConfigEntry(
        domain=DOMAIN,
        title=llama_server.url,
        data={CONF_URL: llama_server.url, CONF_API_KEY: API_KEY},
        subentries_data=[
            {
                "subentry_type": "conversation",
                "title": MODEL_ID,
                "data": DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID},
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    return entry


def _missing_translations(result: dict[str, Any], strings: dict[str, Any]) -> list[str]:
    """Return the translation keys a flow result uses that en.json lacks."""
    if result["type"] is FlowResultType.CREATE_ENTRY:
        return []
    handler = result["handler"]
    # A subentry flow's handler is (entry id, subentry type).
    section = (
        ("config_subentries", handler[1]) if isinstance(handler, tuple) else ("config",)
    )
    keys: list[tuple[str, ...]] = []
    if result["type"] is FlowResultType.ABORT:
        keys.append((*section, "abort", result["reason"]))
    elif result["type"] is FlowResultType.FORM:
        step = (*section, "step", result["step_id"])
        keys.append(step)
        keys += [(*step, "data", str(key)) for key in result["data_schema"].schema]
        keys += [
            (*section, "error", error) for error in (result["errors"] or {}).values()
        ]
    missing = []
    for key in keys:
        node: Any = strings
        for part in key:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            missing.append(".".join(key))
    return missing


@pytest.fixture(autouse=True)
def check_translations(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test whose flows show a step, field, error or abort en.json lacks."""
    strings = json.loads(TRANSLATIONS.read_text())
    results: list[dict[str, Any]] = []
    handle_step = FlowManager._async_handle_step

    async def recording_handle_step(self, *args: Any, **kwargs: Any) -> Any:
        result = await handle_step(self, *args, **kwargs)
        if result.get("handler") == DOMAIN or (
            isinstance(result.get("handler"), tuple)
        ):
            results.append(result)
        return result

    monkeypatch.setattr(FlowManager, "_async_handle_step", recording_handle_step)
    yield
    missing = [
        key for result in results for key in _missing_translations(result, strings)
    ]
    assert not missing, f"translations missing for {missing}"
