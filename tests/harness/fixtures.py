"""The fixtures every test folder shares, defined once (a pytest plugin).

`tests/conftest.py` registers this module; folders' conftests add only what
is their own.
"""

from collections.abc import AsyncIterator, Iterator
import json
from pathlib import Path
import subprocess
import sys
from typing import Any

from homeassistant import config_entries
from homeassistant.config_entries import ConfigEntryState, ConfigSubentry
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_MODEL, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowManager, FlowResultType
from homeassistant.helpers import entity_registry as er, llm
from homeassistant.setup import async_setup_component
import probatio as vol
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    DEFAULT_AGENT_OPTIONS,
    DEFAULT_AI_TASK_OPTIONS,
    DOMAIN,
    SUBENTRY_AI_TASK,
)
from tests.harness.agent import API_KEY, TEST_API, Agent
from tests.harness.agent_entry import RecordingTool, ToolsAPI, async_add_agent
from tests.harness.calendar_tools import install_calendar_tools
from tests.harness.deprecations import DeprecatedUsage
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn, serve
from tests.harness.ports import free_port
from tests.harness.real_engines import (
    MISSING_SMOLLM2,
    SHORT_CLIPS,
    SMOLLM2_MODEL,
    LlamaServerOnDemand,
    RealLlamaServer,
    RealWhisperServer,
    cached_model,
    llama_server_binary,
    start_llama_server,
    start_whisper_server,
)
from tests.harness.tool_files import write_tool_files
from tests.harness.whisper_server import WhisperServerStandIn, serve as serve_whisper
from tests.harness.wyoming import write_kokoro_config
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import KokoroService, build_service

REPO = Path(__file__).parents[2]
TRANSLATIONS = REPO / "custom_components" / DOMAIN / "translations" / "en.json"


@pytest.fixture(autouse=True)
def no_deprecated_usage() -> Iterator[None]:
    """Fail a test during which Home Assistant reports our usage as deprecated."""
    with DeprecatedUsage() as usage:
        yield
    usage.check()


@pytest.fixture(autouse=True)
def custom_integrations(request: pytest.FixtureRequest) -> None:
    """In a test with a Home Assistant: this repository's integrations loadable.

    HA's core component is set up first, as in a running Home Assistant (the
    `conversation` component expects it).
    """
    if "hass" in request.fixturenames:
        request.getfixturevalue("home_assistant_core")


@pytest.fixture
async def home_assistant_core(
    hass: HomeAssistant, enable_custom_integrations: None
) -> None:
    """HA's core component, set up."""
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
        # The config flow and subentry flows; a repair's fix flow (also
        # handled by DOMAIN) has translations of its own issue.
        config_flow = result.get("handler") == DOMAIN and isinstance(
            self, config_entries.ConfigEntriesFlowManager
        )
        if config_flow or isinstance(result.get("handler"), tuple):
            results.append(result)
        return result

    monkeypatch.setattr(FlowManager, "_async_handle_step", recording_handle_step)
    yield
    missing = [
        key for result in results for key in _missing_translations(result, strings)
    ]
    assert not missing, f"translations missing for {missing}"


@pytest.fixture
def agent_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The agent's subentry options; tests override it with parametrize.

    Its LLM APIs are the test's recording tools, or those a `llm_apis` mark
    of the test or its module names.
    """
    mark = request.node.get_closest_marker("llm_apis")
    apis = list(mark.args) if mark else [TEST_API]
    return DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: apis}


@pytest.fixture
def tool_files(request: pytest.FixtureRequest) -> dict[str, str]:
    """Tool files (name -> TOML) in the config folder when the agent starts.

    None, or the example calendar tools on `vdir` for a test marked
    `calendar_tools`.
    """
    return marked_tool_files(request) or {}


def marked_tool_files(request: pytest.FixtureRequest) -> dict[str, str] | None:
    """The example calendar tools when the test is marked `calendar_tools`."""
    if request.node.get_closest_marker("calendar_tools") is None:
        return None
    return request.getfixturevalue("calendar_tool_files")


@pytest.fixture
def vdir(tmp_path: Path) -> Path:
    """An empty vdir: the calendars the example calendar tools read and write."""
    return tmp_path / "calendars"


@pytest.fixture
def calendar_tool_files(hass_config_dir: str, vdir: Path) -> dict[str, str]:
    """The example calendar tools installed in the config folder, on `vdir`."""
    return install_calendar_tools(Path(hass_config_dir, DOMAIN), vdir)


@pytest.fixture
async def agent(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    agent_options: dict[str, Any],
    tool_files: dict[str, str],
) -> AsyncIterator[Agent]:
    """The agent of a llama-server entry, with the test API and tool files."""
    await hass.async_add_executor_job(
        write_tool_files, Path(hass.config.path(DOMAIN)), tool_files
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


@pytest.fixture
def sleeping_llama_server(
    tmp_path: Path, socket_enabled: None
) -> Iterator[LlamaServerOnDemand]:
    """A real llama-server on a known loopback port, not started: a desktop asleep."""
    llama_server_binary()
    on_demand = LlamaServerOnDemand(tmp_path, free_port())
    yield on_demand
    on_demand.stop()


@pytest.fixture(scope="module")
def smollm2_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealLlamaServer]:
    """llama-server on SmolLM2 for the module, with its own template (no tool calls)."""
    model = cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
    with start_llama_server(
        tmp_path_factory.mktemp("smollm2"), "--ctx-size", "4096", model=model
    ) as server:
        yield server


@pytest.fixture(scope="module")
def real_whisper(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealWhisperServer]:
    """whisper-server on Whisper base for the module, for short clips."""
    with start_whisper_server(
        tmp_path_factory.mktemp("whisper"), *SHORT_CLIPS
    ) as server:
        yield server


@pytest.fixture
def smollm2_url(smollm2_server: RealLlamaServer) -> str:
    """Where the SmolLM2 agent reaches llama-server; a test module may tap it."""
    return smollm2_server.url


@pytest.fixture
def smollm2_apis() -> list[str]:
    """The SmolLM2 agent's LLM APIs: none, unless a test module says."""
    return []


@pytest.fixture
async def smollm2_agent(
    hass: HomeAssistant, socket_enabled: None, smollm2_url: str, smollm2_apis: list[str]
) -> AsyncIterator[tuple[config_entries.ConfigEntry, str]]:
    """The agent added through the config flow; its entry and entity id."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: smollm2_url}
    )
    # Its template cannot call tools: the flow says so, and asks how to call them.
    assert result["step_id"] == "tool_calls"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_TOOL_CALLS: "auto"}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    entry: config_entries.ConfigEntry = result["result"]
    (subentry,) = entry.subentries.values()
    # A plain agent, with steady answers.
    hass.config_entries.async_update_subentry(
        entry,
        subentry,
        data=DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: subentry.data[CONF_MODEL],
            CONF_LLM_HASS_API: smollm2_apis,
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: 48,
        },
    )
    await hass.async_block_till_done()
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", DOMAIN, subentry.subentry_id
    )
    assert entity_id
    yield entry, entity_id
    await hass.config_entries.async_unload(entry.entry_id)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Kokoro model and voices file, made by scripts/make-test-models."""
    folder = tmp_path_factory.mktemp("models")
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make-test-models"), str(folder)],
        check=True,
        capture_output=True,
    )
    return folder


@pytest.fixture
def kokoro_config(tmp_path: Path, tiny_models: Path) -> Path:
    """Config with the seed's two voices."""
    return write_kokoro_config(tmp_path, tiny_models)


@pytest.fixture
def kokoro_service(kokoro_config: Path) -> Iterator[KokoroService]:
    """The Kokoro service as the server builds it, for in-process servers."""
    service = build_service(load_config(kokoro_config))
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
async def whisper_server(socket_enabled: None) -> AsyncIterator[WhisperServerStandIn]:
    """A whisper-server stand-in; the test fails if the wrapper broke its contract."""
    async with serve_whisper(WhisperServerStandIn()) as stand_in:
        yield stand_in
    assert stand_in.violations == []


@pytest.fixture
def task_options() -> dict[str, Any]:
    """The AI task subentry's options; tests override it with parametrize."""
    return DEFAULT_AI_TASK_OPTIONS | {CONF_MODEL: MODEL_ID}


@pytest.fixture
def media(hass: HomeAssistant, tmp_path: Path) -> Path:
    """A media folder of Home Assistant's; listed before `task_entity`, set before it."""
    folder = tmp_path / "media"
    folder.mkdir()
    hass.config.media_dirs = {"local": str(folder)}
    return folder


@pytest.fixture
async def task_entity(
    hass: HomeAssistant, config_entry: MockConfigEntry, task_options: dict[str, Any]
) -> str:
    """The entity of an AI task subentry added to the stand-in's entry."""
    return await async_add_task(hass, config_entry, task_options)


async def async_add_task(
    hass: HomeAssistant, entry: MockConfigEntry, options: dict[str, Any]
) -> str:
    """Add an AI task subentry to the entry, set up or reloaded; its entity id.

    A loaded entry reloads by itself when a subentry is added.
    """
    hass.config_entries.async_add_subentry(
        entry,
        ConfigSubentry(
            data=options,
            subentry_type=SUBENTRY_AI_TASK,
            title="Tasks",
            unique_id=None,
        ),
    )
    await hass.async_block_till_done()
    if entry.state is ConfigEntryState.NOT_LOADED:
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
    (subentry_id,) = [
        s.subentry_id
        for s in entry.subentries.values()
        if s.subentry_type == SUBENTRY_AI_TASK
    ]
    entity_id = er.async_get(hass).async_get_entity_id("ai_task", DOMAIN, subentry_id)
    assert entity_id is not None
    return entity_id
