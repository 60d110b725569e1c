"""`ai_task.generate_data` through the AI task entity, against the stand-in."""

import asyncio
from typing import Any

from homeassistant.components import ai_task
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_MODEL, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er, llm
import probatio as vol
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_FALLBACK_SERVERS,
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    DEFAULT_AI_TASK_OPTIONS,
    DOMAIN,
    SUBENTRY_AI_TASK,
)
from custom_components.desktop_assistant.server.activity import async_get_activity
from tests.harness.agent_entry import RecordingTool, ToolsAPI
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    Reply,
    error_body,
    text_reply,
)

STRUCTURE = {
    "name": {"selector": {"text": None}, "required": True},
    "day": {"selector": {"number": {"min": 1, "max": 31}}, "required": True},
}


async def generate(
    hass: HomeAssistant, entity_id: str, task_name: str, instructions: str, **extra: Any
) -> dict[str, Any] | None:
    """Call `ai_task.generate_data` on the entity; its response."""
    return await hass.services.async_call(
        ai_task.DOMAIN,
        "generate_data",
        {
            "entity_id": entity_id,
            "task_name": task_name,
            "instructions": instructions,
            **extra,
        },
        blocking=True,
        return_response=True,
    )


async def test_generate_text(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    llama_server.script = [text_reply("Buy ", "milk.")]
    result = await generate(hass, task_entity, "shopping", "Say what to buy.")
    assert result is not None
    assert result["data"] == "Buy milk."
    (request,) = llama_server.chat_requests
    assert "response_format" not in request
    assert request["model"] == MODEL_ID
    assert request["temperature"] == DEFAULT_AI_TASK_OPTIONS[CONF_TEMPERATURE]
    assert request["max_tokens"] == DEFAULT_AI_TASK_OPTIONS[CONF_MAX_TOKENS]
    question = request["messages"][-1]
    assert question["role"] == "user"
    assert question["content"].startswith("Say what to buy.")
    assert request["messages"][0]["role"] == "system"


async def test_generate_structured_data(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    llama_server.script = [text_reply('{"name": "Anouk", "day": 3}')]
    result = await generate(
        hass,
        task_entity,
        "birthday",
        "Anouk's birthday is 3 November. Give name and day.",
        structure=STRUCTURE,
    )
    assert result is not None
    assert result["data"] == {"name": "Anouk", "day": 3}
    (request,) = llama_server.chat_requests
    response_format = request["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "birthday"
    schema = response_format["json_schema"]["schema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["name", "day"]
    assert schema["properties"]["name"] == {"type": "string"}
    assert schema["properties"]["day"]["type"] == "number"


@pytest.fixture
def template_without_tools(llama_server: LlamaServerStandIn) -> None:
    """The stand-in reports a template that cannot call tools (SmolLM2's)."""
    llama_server.template_calls_tools = False


@pytest.mark.parametrize(
    ("structure", "answer", "data"),
    [
        (None, "Buy milk.", "Buy milk."),
        (
            vol.Schema({vol.Required("name"): str, vol.Required("day"): int}),
            '{"name": "Anouk", "day": 3}',
            {"name": "Anouk", "day": 3},
        ),
    ],
)
async def test_a_task_with_tools_on_a_template_without_tools_keeps_its_form(
    hass: HomeAssistant,
    template_without_tools: None,
    llama_server: LlamaServerStandIn,
    task_entity: str,
    structure: vol.Schema | None,
    answer: str,
    data: Any,
) -> None:
    """The task's text or structure, never a constrained reply's JSON."""
    weather = RecordingTool("weather", {vol.Optional("place"): str}, "Rome: sun")
    api = ToolsAPI(hass=hass, id="task_tools", name="Task tools", tools=[weather])
    llm.async_register_api(hass, api)
    llama_server.script = [text_reply(answer)]
    result = await ai_task.async_generate_data(
        hass,
        task_name="birthday",
        entity_id=task_entity,
        instructions="Anouk's birthday is 3 November. Give name and day.",
        structure=structure,
        llm_api=api,
    )

    assert result.data == data
    (request,) = llama_server.chat_requests
    if structure is None:
        assert "response_format" not in request
    else:
        schema = request["response_format"]["json_schema"]["schema"]
        assert schema["required"] == ["name", "day"]
    assert weather.calls == []


@pytest.mark.parametrize(
    "answer", ['{"name": "Anouk", "day": ', '{"name": "Anouk", "day": 99}']
)
async def test_invalid_structured_answer_is_an_error(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    task_entity: str,
    answer: str,
) -> None:
    llama_server.script = [text_reply(answer)]
    with pytest.raises(
        HomeAssistantError, match="The model's answer for birthday was not what"
    ) as caught:
        await generate(
            hass, task_entity, "birthday", "Give name and day.", structure=STRUCTURE
        )
    assert caught.value.translation_key == "generation_invalid_output"
    assert hass.states.get(task_entity) is not None


async def test_a_busy_server_is_asked_again(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    """As generation does: a fault that may pass is tried again, 1 s later."""
    busy = Reply(status=503, body=error_body(503, "Loading model", "unavailable_error"))
    llama_server.script = [busy, text_reply("Buy ", "milk.")]
    result = await generate(hass, task_entity, "shopping", "Say what to buy.")
    assert result is not None
    assert result["data"] == "Buy milk."
    assert len(llama_server.chat_requests) == 2


async def test_a_task_asked_during_a_conversation_turn_answers_then(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    """A conversation's own tool may ask for a task: it does not wait on the turn."""
    llama_server.script = [text_reply("Buy ", "milk.")]
    with async_get_activity(hass).turn():
        async with asyncio.timeout(30):
            result = await generate(hass, task_entity, "shopping", "Say what to buy.")
    assert result is not None
    assert result["data"] == "Buy milk."


async def test_a_refusal_is_not_asked_again(
    hass: HomeAssistant, llama_server: LlamaServerStandIn, task_entity: str
) -> None:
    llama_server.script = [
        Reply(status=400, body=error_body(400, "bad grammar", "invalid_request_error"))
    ]
    with pytest.raises(HomeAssistantError, match="bad grammar") as caught:
        await generate(hass, task_entity, "shopping", "Say what to buy.")
    assert caught.value.translation_key == "generation_refused"
    assert len(llama_server.chat_requests) == 1


async def test_add_ai_task_through_the_subentry_flow(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    assert config_entry.state is ConfigEntryState.LOADED
    result = await hass.config_entries.subentries.async_init(
        (config_entry.entry_id, SUBENTRY_AI_TASK), context={"source": "user"}
    )
    assert result["type"] is FlowResultType.FORM
    fields = {str(key) for key in result["data_schema"].schema}
    assert fields == {
        CONF_NAME,
        CONF_MODEL,
        CONF_TEMPERATURE,
        CONF_MAX_TOKENS,
        CONF_REQUEST_TIMEOUT,
        CONF_FALLBACK_SERVERS,
    }
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Household tasks",
            CONF_MODEL: MODEL_ID,
            CONF_TEMPERATURE: 0.1,
            CONF_MAX_TOKENS: 512,
            CONF_REQUEST_TIMEOUT: 30,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    subentry = next(
        s for s in config_entry.subentries.values() if s.title == "Household tasks"
    )
    assert subentry.subentry_type == SUBENTRY_AI_TASK
    assert er.async_get(hass).async_get_entity_id(
        "ai_task", DOMAIN, subentry.subentry_id
    )
