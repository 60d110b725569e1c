"""Structured generation on the real llama-server: its json_schema support.

The tiny model writes random tokens, so only llama-server's grammar, built
from the schema we send, can make its answer valid JSON of that shape.
"""

from collections.abc import Iterator

from homeassistant.components import ai_task
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_MODEL, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import probatio as vol
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    DEFAULT_AI_TASK_OPTIONS,
    DOMAIN,
    SUBENTRY_AI_TASK,
)
from custom_components.desktop_assistant.memory.nightly.plan import PLAN_SCHEMA
from custom_components.desktop_assistant.server.client import LlamaServerClient
from custom_components.desktop_assistant.server.generate import (
    GenerationError,
    Generator,
)
from tests.harness.real_engines import RealLlamaServer, start_llama_server

# Every value is bounded (enums, booleans), so the random model must end.
STRUCTURE = {
    "mood": {"selector": {"select": {"options": ["calm", "busy"]}}, "required": True},
    "home": {"selector": {"boolean": {}}, "required": True},
}


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLlamaServer]:
    """One llama-server for the module, on the tiny model."""
    with start_llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server


async def test_ai_task_structure_through_json_schema(
    hass: HomeAssistant, socket_enabled: None, real_server: RealLlamaServer
) -> None:
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_URL: real_server.url},
        subentries_data=[
            {
                "subentry_type": SUBENTRY_AI_TASK,
                "title": "Tasks",
                "data": DEFAULT_AI_TASK_OPTIONS
                | {CONF_MODEL: str(real_server.model_path)},
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    subentry: ConfigSubentry = next(iter(entry.subentries.values()))
    entity_id = er.async_get(hass).async_get_entity_id(
        "ai_task", DOMAIN, subentry.subentry_id
    )
    for _ in range(3):
        result = await hass.services.async_call(
            ai_task.DOMAIN,
            "generate_data",
            {
                "entity_id": entity_id,
                "task_name": "household",
                "instructions": "How is the household today?",
                "structure": STRUCTURE,
            },
            blocking=True,
            return_response=True,
        )
        assert result is not None
        data = result["data"]
        assert set(data) == {"mood", "home"}
        assert data["mood"] in {"calm", "busy"}
        assert isinstance(data["home"], bool)
    await hass.config_entries.async_unload(entry.entry_id)


async def test_generator_gets_schema_valid_json(
    hass: HomeAssistant, socket_enabled: None, real_server: RealLlamaServer
) -> None:
    generator = Generator(
        LlamaServerClient(async_get_clientsession(hass), real_server.url),
        str(real_server.model_path),
    )
    schema = vol.Schema(
        {vol.Required("answer"): vol.In(["yes", "no"]), vol.Required("sure"): bool}
    )
    generation = await generator.async_generate(
        [{"role": "user", "content": "Is it raining?"}],
        structure=schema,
        max_tokens=64,
    )
    assert generation.data["answer"] in {"yes", "no"}
    assert generation.timings["prompt_n"] > 0
    # llama-server accepts the plan's schema (a refused schema would be an
    # HTTP 400, kind "refused"); the random model's plan is cut short.
    with pytest.raises(GenerationError, match="cut at 8 tokens") as caught:
        await generator.async_generate(
            [{"role": "user", "content": "Plan."}],
            structure=PLAN_SCHEMA,
            max_tokens=8,
            name="plan",
        )
    assert caught.value.kind == "invalid_output"
