"""The tools reach every LLM agent through the Assist API, as any agent calls them."""

from pathlib import Path
import textwrap

from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm
import probatio

from custom_components.desktop_assistant.llm import parameters_schema, tool_file_name
from custom_components.desktop_assistant.runtime import DATA_TOOLS
from custom_components.desktop_assistant.tools.spec import PARAM_TYPES
from tests.harness.tool_files import write_tool

from .conftest import Setup

LLM_CONTEXT = llm.LLMContext(
    platform="ollama",
    context=Context(),
    language="en",
    assistant="conversation",
    device_id=None,
)


async def assist_api(hass: HomeAssistant) -> llm.APIInstance:
    """The Assist API instance an agent with Assist enabled gets for a turn."""
    return await llm.async_get_api(hass, llm.LLM_API_ASSIST, LLM_CONTEXT)


async def test_tools_are_offered_with_their_schema(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    api = await assist_api(hass)
    ours = [tool for tool in api.tools if tool_file_name(tool)]
    assert [tool.name for tool in ours] == ["desktop_assistant__weather"]
    (weather,) = ours
    assert weather.description == "Current weather. Leave place empty for home."
    assert weather.integration == "desktop_assistant"
    assert weather.annotations.read_only
    assert not weather.annotations.destructive
    # What an agent sends to its model (ollama's and openai's formatting).
    assert probatio.to_openapi(
        weather.parameters,
        custom_serializer=api.custom_serializer,
        openapi_version="3.1.0",
    ) == {
        "type": "object",
        "properties": {
            "place": {"type": "string", "description": "City name, empty for home"},
            "days": {"type": "integer", "description": "Days ahead, empty for now"},
        },
        "additionalProperties": False,
    }


EVERY_TYPE = """
    description = "One parameter of each type"
    command = ["echo", "{s}", "{i}", "{n}", "{b}"]
"""


async def test_every_parameter_type_reaches_the_model_as_json_schema(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    """The one schema function (llm.parameters_schema) for every type of PARAM_TYPES."""
    params = "".join(
        f'[params.{name}]\ntype = "{kind}"\ndescription = "a {kind}"\n'
        for name, kind in zip("sinb", PARAM_TYPES, strict=True)
    )
    write_tool(tool_folder, "every_type", textwrap.dedent(EVERY_TYPE) + params)
    await setup_integration()
    api = await assist_api(hass)
    (offered,) = [tool for tool in api.tools if tool_file_name(tool) == "every_type"]
    expected = {
        "type": "object",
        "properties": {
            name: {"type": kind, "description": f"a {kind}"}
            for name, kind in zip("sinb", PARAM_TYPES, strict=True)
        },
        "additionalProperties": False,
    }
    schema = probatio.to_openapi(
        offered.parameters,
        custom_serializer=api.custom_serializer,
        openapi_version="3.1.0",
    )
    assert schema == expected
    spec = hass.data[DATA_TOOLS].get("every_type")
    assert probatio.to_openapi(parameters_schema(spec)) == expected
    # The schema holds what the tool accepts.
    assert offered.parameters({"s": "x", "i": 2, "n": 1.5, "b": True})


async def test_agent_calls_a_tool(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    api = await assist_api(hass)
    result = await api.async_call_tool(
        llm.ToolInput("desktop_assistant__weather", {"place": "Rome", "days": 1})
    )
    assert result == llm.ToolResult(data={"result": "Weather in Rome in 1 days: sunny"})


async def test_tool_errors_are_results_not_exceptions(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    api = await assist_api(hass)
    result = await api.async_call_tool(
        llm.ToolInput("desktop_assistant__weather", {"place": "Atlantis"})
    )
    assert result == llm.ToolResult(
        data={
            "result": "error: weather.sh exited with status 4: no such city: Atlantis"
        },
        error=True,
    )
    # Home Assistant passes arguments unchecked: the tool checks them.
    result = await api.async_call_tool(
        llm.ToolInput("desktop_assistant__weather", {"city": "Rome"})
    )
    assert result == llm.ToolResult(
        data={"result": "error: unknown parameter 'city': weather takes place, days"},
        error=True,
    )


async def test_no_tools_without_a_folder(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    await setup_integration()
    api = await assist_api(hass)
    # Memory's tools remain; no tool file is offered.
    assert not [tool for tool in api.tools if tool_file_name(tool)]
