"""The agent through Home Assistant against a real instruct model.

SmolLM2-135M-Instruct on the packaged llama-server, both installed by
scripts/setup; without them these tests skip and the test run says so at
its end.
"""

from collections.abc import AsyncIterator, Iterator
from typing import Any

from homeassistant import config_entries
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from custom_components.desktop_assistant.text import words
from tests.harness.agent_entry import async_ask
from tests.harness.real_engines import (
    MISSING_SMOLLM2,
    REAL_MODEL_TIMEOUT,
    SMOLLM2_MODEL,
    RealLlamaServer,
    cached_model,
    start_llama_server,
)

pytestmark = REAL_MODEL_TIMEOUT


@pytest.fixture(scope="module")
def smollm2_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealLlamaServer]:
    """One llama-server on SmolLM2 for the module, with its own chat template."""
    model = cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
    with start_llama_server(
        tmp_path_factory.mktemp("smollm2"), "--ctx-size", "4096", model=model
    ) as server:
        yield server


@pytest.fixture
async def smollm2_agent(
    hass: HomeAssistant, socket_enabled: None, smollm2_server: RealLlamaServer
) -> AsyncIterator[tuple[config_entries.ConfigEntry, str]]:
    """The agent added through the config flow; its entry and entity id."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: smollm2_server.url}
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
            CONF_LLM_HASS_API: [],
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


async def test_a_plain_question_is_answered_in_streamed_english_and_recorded(
    hass: HomeAssistant,
    hass_ws_client: WebSocketGenerator,
    smollm2_agent: tuple[config_entries.ConfigEntry, str],
    smollm2_server: RealLlamaServer,
) -> None:
    entry, entity_id = smollm2_agent
    deltas: list[dict[str, Any]] = []
    result = await async_ask(
        hass,
        entity_id,
        "What is the capital of France?",
        None,
        lambda _log, delta: deltas.append(delta),
    )
    pieces = [delta["content"] for delta in deltas if delta.get("content")]
    answer = result.response.speech["plain"]["speech"]
    assert len(pieces) > 1
    assert answer == "".join(pieces)
    # A 135M model knows this much, whatever the date in the prompt.
    assert "paris" in words(answer)

    await hass.async_block_till_done()
    client = await hass_ws_client(hass)
    await client.send_json_auto_id(
        {
            "type": f"{DOMAIN}/conversations/get",
            "conversation_id": result.conversation_id,
        }
    )
    response = await client.receive_json()
    assert response["success"], response
    (reply,) = [e for e in response["result"]["entries"] if e["kind"] == "assistant"]
    assert reply["text"] == answer
    assert reply["server"] == entry.title
    # The model's id as llama-server gives it: the path it loaded.
    assert reply["model"] == str(smollm2_server.model_path)
