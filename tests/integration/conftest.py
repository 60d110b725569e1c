"""Fixtures for tests of the integration inside Home Assistant."""

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
import json
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_MODEL, CONF_URL
from homeassistant.core import Context, HomeAssistant
from homeassistant.data_entry_flow import FlowManager, FlowResultType
from homeassistant.helpers import chat_session, llm
from homeassistant.setup import async_setup_component
import probatio as vol
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN

from tests.harness.agent_entry import RecordingTool, ToolsAPI, async_add_agent
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn, serve

API_KEY = "sk-test-5f0c2e9a7b"
TRANSLATIONS = (
    Path(__file__).parents[2]
    / "custom_components"
    / DOMAIN
    / "translations"
    / "en.json"
)


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


TEST_API = "test_tools"


@dataclass
class Agent:
    """The agent under test, its server and its tools."""

    hass: HomeAssistant
    entity_id: str
    entry: MockConfigEntry
    server: LlamaServerStandIn
    weather: RecordingTool
    time: RecordingTool

    async def ask(
        self, text: str, conversation_id: str | None = None, language: str = "en"
    ) -> conversation.ConversationResult:
        return await conversation.async_converse(
            self.hass, text, conversation_id, Context(), language, self.entity_id
        )

    def chat_log(self, conversation_id: str) -> list[conversation.Content]:
        with (
            chat_session.async_get_chat_session(self.hass, conversation_id) as session,
            conversation.async_get_chat_log(self.hass, session) as chat_log,
        ):
            return list(chat_log.content)


@pytest.fixture
def agent_options() -> dict[str, Any]:
    """The agent's subentry options; tests override it with parametrize."""
    return DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [TEST_API]}


def write_tool_files(tools_dir: Path, tool_files: dict[str, str]) -> None:
    """Write tool files into a config folder's tools/."""
    tools_dir.mkdir(parents=True, exist_ok=True)
    for name, text in tool_files.items():
        (tools_dir / f"{name}.toml").write_text(text)


@pytest.fixture
def tool_files() -> dict[str, str]:
    """Tool files (name -> TOML) in the config folder when the agent starts."""
    return {}


@pytest.fixture
async def agent(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    agent_options: dict[str, Any],
    tool_files: dict[str, str],
) -> AsyncIterator[Agent]:
    """The agent of a llama-server entry, with the test API and tool files."""
    await hass.async_add_executor_job(
        write_tool_files,
        Path(hass.config.path("desktop_assistant", "tools")),
        tool_files,
    )
    weather = RecordingTool(
        "weather",
        {vol.Optional("place"): str, vol.Optional("when"): str},
        "Rome: clear sky, 18 °C",
    )
    time_tool = RecordingTool("GetDateTime", {}, "14:05")
    unregister = llm.async_register_api(
        hass,
        ToolsAPI(hass=hass, id=TEST_API, name="Test tools", tools=[weather, time_tool]),
    )
    entry, entity_id = await async_add_agent(hass, llama_server.url, agent_options)
    yield Agent(hass, entity_id, entry, llama_server, weather, time_tool)
    unregister()


def speech(result: conversation.ConversationResult) -> str:
    return result.response.speech["plain"]["speech"]


async def run_text_pipeline(
    hass: HomeAssistant, hass_ws_client: Any, agent_id: str, text: str
) -> list[dict[str, Any]]:
    """Run an Assist pipeline with the agent, text in and out; return its events."""
    assert await async_setup_component(hass, "assist_pipeline", {})
    client = await hass_ws_client(hass)
    await client.send_json_auto_id(
        {
            "type": "assist_pipeline/run",
            "start_stage": "intent",
            "end_stage": "intent",
            "input": {"text": text},
            "pipeline": agent_id,
        }
    )
    assert (await client.receive_json())["success"]
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != "run-end":
        events.append((await client.receive_json())["event"])
    return events
