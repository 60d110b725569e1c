"""Each tool is an intent: DesktopAssistant<CamelCase name>, slots = params."""

from pathlib import Path

from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent

from tests.harness.tool_files import write_tool

from .conftest import Setup


async def test_intents_registered_per_tool(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    write_tool(
        tool_folder,
        "web_search",
        """
        description = "Search the web"
        command = ["echo", "{query}"]
        [params.query]
        type = "string"
        description = "What to look for"
        """,
    )
    await setup_integration()
    handlers = {
        handler.intent_type: handler
        for handler in intent.async_get(hass)
        if handler.intent_type.startswith("DesktopAssistant")
    }
    assert sorted(handlers) == ["DesktopAssistantWeather", "DesktopAssistantWebSearch"]
    weather = handlers["DesktopAssistantWeather"]
    assert weather.description == "Current weather. Leave place empty for home."
    assert sorted(str(key) for key in weather.slot_schema) == ["days", "place"]


async def test_intent_answers_with_the_tool_output(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    response = await intent.async_handle(
        hass,
        "test",
        "DesktopAssistantWeather",
        {"place": {"value": "Rome"}, "days": {"value": "2"}},
    )
    assert response.response_type == intent.IntentResponseType.ACTION_DONE
    assert response.speech["plain"]["speech"] == "Weather in Rome in 2 days: sunny"

    response = await intent.async_handle(hass, "test", "DesktopAssistantWeather", {})
    assert response.speech["plain"]["speech"] == "Weather in Bari in 0 days: sunny"


async def test_intent_with_a_failing_tool_or_bad_slot(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    response = await intent.async_handle(
        hass, "test", "DesktopAssistantWeather", {"place": {"value": "Atlantis"}}
    )
    assert response.response_type == intent.IntentResponseType.ERROR
    assert response.error_code == intent.IntentResponseErrorCode.FAILED_TO_HANDLE
    assert response.speech["plain"]["speech"] == (
        "error: weather.sh exited with status 4: no such city: Atlantis"
    )

    response = await intent.async_handle(
        hass, "test", "DesktopAssistantWeather", {"days": {"value": "soon"}}
    )
    assert response.response_type == intent.IntentResponseType.ERROR
    assert response.speech["plain"]["speech"] == (
        "error: parameter 'days' must be an integer, got \"soon\""
    )


async def test_no_folder_no_intents(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    await setup_integration()
    assert not [
        handler
        for handler in intent.async_get(hass)
        if handler.intent_type.startswith("DesktopAssistant")
    ]
