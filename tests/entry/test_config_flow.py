"""The config flow against a llama-server stand-in on a real socket."""

import json
from pathlib import Path
from typing import Any

from homeassistant import config_entries
from homeassistant.const import (
    CONF_API_KEY,
    CONF_MODEL,
    CONF_NAME,
    CONF_PROMPT,
    CONF_URL,
)
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import device_registry as dr, entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_REQUEST_TIMEOUT,
    CONF_TOOL_ROUNDS,
    DEFAULT_AGENT_OPTIONS,
    DEFAULT_URL,
    DOMAIN,
)
from custom_components.desktop_assistant.server import client
from custom_components.desktop_assistant.text import model_name
from tests.harness.agent import API_KEY
from tests.harness.entry_setups import EntrySetups
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn, models_body, serve
from tests.harness.ports import closed_port_url

TRANSLATIONS = (
    Path(__file__).resolve().parents[2]
    / "custom_components"
    / "desktop_assistant"
    / "translations"
)


async def start_flow(hass: HomeAssistant) -> str:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    assert result["errors"] == {}
    return result["flow_id"]


async def test_user_flow_creates_entry_with_agent(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.api_key = API_KEY
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    assert result["data_schema"]({}) == {CONF_URL: DEFAULT_URL}

    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_URL: f" {llama_server.url}/ ", CONF_API_KEY: f" {API_KEY} "},
    )
    await hass.async_block_till_done()

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == llama_server.url
    assert result["data"] == {CONF_URL: llama_server.url, CONF_API_KEY: API_KEY}
    entry = result["result"]
    assert entry.state is config_entries.ConfigEntryState.LOADED
    (subentry,) = entry.subentries.values()
    assert subentry.subentry_type == "conversation"
    assert subentry.title == "gemma-3-12b-it-Q4_K_M"
    assert subentry.data == DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID}
    # The flow checked the server with the key as a bearer token.
    checks = [r for r in llama_server.requests if r.path == "/v1/models"]
    assert checks[0].headers["Authorization"] == f"Bearer {API_KEY}"


async def test_user_flow_without_key(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url, CONF_API_KEY: "  "}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {CONF_URL: llama_server.url}
    assert "Authorization" not in llama_server.requests[0].headers


@pytest.mark.parametrize(
    ("override", "error"),
    [
        (
            (200, "<html><body>Welcome to nginx!</body></html>", "text/html"),
            "not_openai_compatible",
        ),
        (
            (200, json.dumps({"object": "list"}), "application/json"),
            "not_openai_compatible",
        ),
        (
            (200, json.dumps({"data": [{"name": "x"}]}), "application/json"),
            "not_openai_compatible",
        ),
        (
            (
                404,
                json.dumps(
                    {
                        "error": {
                            "code": 404,
                            "message": "File Not Found",
                            "type": "not_found_error",
                        }
                    }
                ),
                "application/json",
            ),
            "not_openai_compatible",
        ),
        ((500, "Internal Server Error", "text/plain"), "not_openai_compatible"),
        ((403, json.dumps({"error": "forbidden"}), "application/json"), "invalid_auth"),
    ],
)
async def test_user_flow_server_answers_wrongly(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    override: tuple[int, str, str],
    error: str,
) -> None:
    llama_server.models_override = override
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": error}

    # The person fixes the server and submits again: the flow recovers.
    llama_server.models_override = None
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_user_flow_invalid_auth(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    llama_server.api_key = API_KEY
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url, CONF_API_KEY: "wrong-key"}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url}
    )
    assert result["errors"] == {"base": "invalid_auth"}


async def test_user_flow_cannot_connect(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: closed_port_url("/v1")}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "cannot_connect"}


async def test_user_flow_timeout(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A shorter limit than the 10 s users get, so the test does not wait that long.
    monkeypatch.setattr(client, "CONNECT_TIMEOUT", 0.2)
    llama_server.delay = 2
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url}
    )
    assert result["errors"] == {"base": "timeout_connect"}


@pytest.mark.parametrize(
    "url",
    [
        "not a url",
        "ftp://example.org/v1",
        "",
        # Hosts urlparse or yarl refuse with ValueError rather than vol.Invalid.
        "http://[::1:8181/v1",
        "http://x[::1]/v1",
        "http://[myhost]:8181/v1",
    ],
)
async def test_user_flow_invalid_url(hass: HomeAssistant, url: str) -> None:
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(flow_id, {CONF_URL: url})
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_URL: "invalid_url"}


async def test_user_flow_refuses_a_key_beside_credentials_in_the_url(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    # aiohttp cannot send both; the form says so before any request.
    flow_id = await start_flow(hass)
    url = llama_server.url.replace("://", "://ada:secret@", 1)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: url, CONF_API_KEY: API_KEY}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_API_KEY: "key_and_url_credentials"}
    assert llama_server.requests == []

    # The same URL without a key is checked and kept.
    llama_server.api_key = None
    result = await hass.config_entries.flow.async_configure(flow_id, {CONF_URL: url})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {CONF_URL: url}
    # The check went out with the URL's credentials, as Basic auth.
    check = llama_server.requests[0]
    assert check.path == "/v1/models"
    assert check.headers["Authorization"].startswith("Basic ")


async def test_user_flow_same_url_aborts(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url + "/", CONF_API_KEY: API_KEY}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


async def test_reconfigure_changes_url_and_key(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    await hass.config_entries.async_setup(config_entry.entry_id)
    result = await config_entry.start_reconfigure_flow(hass)
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "reconfigure"

    # A wrong key is refused and the entry stays as it was.
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama_server.url, CONF_API_KEY: "stale"}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    assert config_entry.data[CONF_API_KEY] == API_KEY

    # The server moved to another port and got a new key.
    async with serve(LlamaServerStandIn(api_key="sk-new-key")) as moved:
        new_url = moved.url
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: new_url, CONF_API_KEY: "sk-new-key"}
        )
        await hass.async_block_till_done()
        assert moved.requests[-1].headers["Authorization"] == "Bearer sk-new-key"
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    assert config_entry.data == {CONF_URL: new_url, CONF_API_KEY: "sk-new-key"}
    assert config_entry.title == new_url
    assert config_entry.state is config_entries.ConfigEntryState.LOADED
    assert config_entry.runtime_data.client.url == new_url


async def test_reconfigure_to_another_entrys_url_aborts(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    other = MockConfigEntry(domain=DOMAIN, data={CONF_URL: "http://other:8181/v1"})
    other.add_to_hass(hass)
    result = await other.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: llama_server.url}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


async def test_reauth_after_key_change(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    llama_server.api_key = "sk-rotated"
    await hass.config_entries.async_setup(config_entry.entry_id)
    await hass.async_block_till_done()
    assert config_entry.state is config_entries.ConfigEntryState.SETUP_ERROR
    # Not loaded, the entry has no update listener: the flow reloads it, once.
    setups = EntrySetups(hass, config_entry)

    (flow,) = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert flow["step_id"] == "reauth_confirm"
    result = await hass.config_entries.flow.async_configure(
        flow["flow_id"], {CONF_API_KEY: "sk-rotated"}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reauth_successful"
    assert config_entry.data[CONF_API_KEY] == "sk-rotated"
    assert config_entry.state is config_entries.ConfigEntryState.LOADED
    assert setups.count == 1


async def test_add_and_reconfigure_conversation_agent(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    await hass.config_entries.async_setup(config_entry.entry_id)
    result = await hass.config_entries.subentries.async_init(
        (config_entry.entry_id, "conversation"),
        context={"source": config_entries.SOURCE_USER},
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "set_options"
    model_selector = next(
        value
        for key, value in result["data_schema"].schema.items()
        if str(key) == CONF_MODEL
    )
    assert [o["value"] for o in model_selector.config["options"]] == [MODEL_ID]

    options = DEFAULT_AGENT_OPTIONS | {
        CONF_MODEL: MODEL_ID,
        CONF_PROMPT: "You are the kitchen assistant.",
        CONF_TOOL_ROUNDS: 5,
    }
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Kitchen", **options}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    kitchen = next(s for s in config_entry.subentries.values() if s.title == "Kitchen")
    assert dict(kitchen.data) == options

    result = await config_entry.start_subentry_reconfigure_flow(
        hass, kitchen.subentry_id
    )
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], options | {CONF_REQUEST_TIMEOUT: 30}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    assert config_entry.subentries[kitchen.subentry_id].data[CONF_REQUEST_TIMEOUT] == 30
    assert config_entry.state is config_entries.ConfigEntryState.LOADED


async def test_add_agent_when_the_url_is_no_longer_llama_server(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    await hass.config_entries.async_setup(config_entry.entry_id)
    llama_server.models_override = (404, "Not Found", "text/plain")
    result = await start_adding_an_agent(hass, config_entry)
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "cannot_connect"


async def test_add_agent_while_a_proxy_says_the_server_is_off(
    hass: HomeAssistant, config_entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    # nginx's 502 is a machine asleep: the form offers the model it served last.
    await hass.config_entries.async_setup(config_entry.entry_id)
    llama_server.models_override = (502, "Bad Gateway", "text/plain")
    result = await start_adding_an_agent(hass, config_entry)
    assert result["type"] is FlowResultType.FORM
    assert default_name(result) == model_name(llama_server.model_id)


async def start_adding_an_agent(
    hass: HomeAssistant, entry: MockConfigEntry
) -> dict[str, Any]:
    """The first step of the server's "Add agent" flow."""
    return await hass.config_entries.subentries.async_init(
        (entry.entry_id, "conversation"),
        context={"source": config_entries.SOURCE_USER},
    )


async def test_models_body_is_llama_servers() -> None:
    """The stand-in's body has both lists llama-server sends."""
    body = models_body()
    assert body["object"] == "list"
    assert body["data"][0]["owned_by"] == "llamacpp"
    assert body["models"][0]["model"] == body["data"][0]["id"]


def default_name(result: dict) -> str:
    (key,) = (key for key in result["data_schema"].schema if str(key) == CONF_NAME)
    return key.default()


async def test_agent_is_named_after_the_model_files_stem(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    # llama-server lists the path it was started with as the model's id.
    model = "/models/Qwen3-8B-Q4_K_M.gguf"
    llama_server.model_id = model
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url}
    )
    await hass.async_block_till_done()
    entry = result["result"]
    (subentry,) = entry.subentries.values()

    assert subentry.title == "Qwen3-8B-Q4_K_M"
    assert subentry.data[CONF_MODEL] == model
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", DOMAIN, subentry.subentry_id
    )
    assert entity_id == "conversation.qwen3_8b_q4_k_m"
    assert hass.states.get(entity_id).name == "Qwen3-8B-Q4_K_M"
    devices = dr.async_get(hass)
    device = devices.async_get_device_by_identifier(
        (DOMAIN, subentry.subentry_id), entry.entry_id
    )
    # The device shows the model's file, not the path it was loaded from.
    assert (device.name, device.model) == ("Qwen3-8B-Q4_K_M", "Qwen3-8B-Q4_K_M")

    # A new agent's name defaults to the stem too, made unique, and can be chosen.
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "conversation"),
        context={"source": config_entries.SOURCE_USER},
    )
    assert default_name(result) == "Qwen3-8B-Q4_K_M 2"

    # Reconfiguring renames the agent and its device; the entity id stays.
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "conversation"),
        context={
            "source": config_entries.SOURCE_RECONFIGURE,
            "subentry_id": subentry.subentry_id,
        },
    )
    assert default_name(result) == "Qwen3-8B-Q4_K_M"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], dict(subentry.data) | {CONF_NAME: "Kitchen"}
    )
    await hass.async_block_till_done()
    assert result["reason"] == "reconfigure_successful"
    assert entry.subentries[subentry.subentry_id].title == "Kitchen"
    assert entry.subentries[subentry.subentry_id].data[CONF_MODEL] == model
    device = devices.async_get_device_by_identifier(
        (DOMAIN, subentry.subentry_id), entry.entry_id
    )
    assert (device.name, device.model) == ("Kitchen", "Qwen3-8B-Q4_K_M")
    assert hass.states.get(entity_id).name == "Kitchen"


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("gemma-3-12b-it-Q4_K_M.gguf", "gemma-3-12b-it-Q4_K_M"),
        ("C:\\models\\Phi-4.GGUF", "Phi-4"),
        ("qwen3", "qwen3"),
        ("/models/", ""),
        ("", ""),
    ],
)
def test_model_name(model: str, name: str) -> None:
    assert model_name(model) == name


async def test_every_new_agent_gets_a_name_of_its_own(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    """Defaults never repeat, across servers; a blank name gets one too."""
    stem = "gemma-3-12b-it-Q4_K_M"
    # Another server already has an agent named after the same model.
    MockConfigEntry(
        domain=DOMAIN,
        data={CONF_URL: "http://other:8181/v1"},
        subentries_data=[
            config_entries.ConfigSubentryData(
                subentry_type="conversation",
                title=stem,
                data=DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID},
                unique_id=None,
            )
        ],
    ).add_to_hass(hass)
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: llama_server.url}
    )
    await hass.async_block_till_done()
    entry = result["result"]
    assert [s.title for s in entry.subentries.values()] == [f"{stem} 2"]

    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, "conversation"),
        context={"source": config_entries.SOURCE_USER},
    )
    assert default_name(result) == f"{stem} 3"
    # A name left blank (spaces only) is given the next free one.
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_NAME: "   "},
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    titles = sorted(s.title for s in entry.subentries.values())
    assert titles == [f"{stem} 2", f"{stem} 3"]
    entity_ids = {
        er.async_get(hass).async_get_entity_id("conversation", DOMAIN, subentry_id)
        for subentry_id in entry.subentries
    }
    assert entity_ids == {
        "conversation.gemma_3_12b_it_q4_k_m_2",
        "conversation.gemma_3_12b_it_q4_k_m_3",
    }


async def test_a_url_without_v1_is_stored_with_it(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    flow_id = await start_flow(hass)
    bare = llama_server.url.removesuffix("/v1")
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: f" {bare}/ "}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {CONF_URL: llama_server.url}
    assert result["title"] == llama_server.url


@pytest.mark.parametrize(
    ("stored", "typed"),
    [
        ("{url}", "{bare}"),
        ("{url}", "{bare}/"),
        ("{url}", "HTTP://127.0.0.1:{port}/v1/"),
        # An entry added before URLs were normalised.
        ("{bare}", "{url}"),
    ],
)
async def test_the_same_server_typed_another_way_aborts(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, stored: str, typed: str
) -> None:
    spellings = {
        "url": llama_server.url,
        "bare": llama_server.url.removesuffix("/v1"),
        "port": llama_server.port,
    }
    MockConfigEntry(
        domain=DOMAIN, data={CONF_URL: stored.format(**spellings)}
    ).add_to_hass(hass)
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: typed.format(**spellings)}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"
    assert len(hass.config_entries.async_entries(DOMAIN)) == 1


@pytest.mark.parametrize("language", ["en", "de", "es", "fr", "it", "nl"])
async def test_failed_to_connect_says_what_to_check(
    hass: HomeAssistant, socket_enabled: None, language: str
) -> None:
    flow_id = await start_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: closed_port_url("/v1")}
    )
    assert result["errors"] == {"base": "cannot_connect"}
    translations = json.loads(
        (TRANSLATIONS / f"{language}.json").read_text(encoding="utf-8")
    )
    shown = translations["config"]["error"]["cannot_connect"]
    # What the troubleshooting page says, where the user meets the fault.
    assert "--host 0.0.0.0" in shown
    assert "/v1" in shown
    assert len(shown) > len("Failed to connect") * 3
