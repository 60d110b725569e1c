"""Actions: run_tool's response data, reload, and Repairs for broken files."""

from pathlib import Path

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import intent, issue_registry as ir, llm
from homeassistant.helpers.icon import async_get_icons
from homeassistant.helpers.service import async_get_all_descriptions
from homeassistant.helpers.translation import async_get_translations
import pytest

from custom_components.desktop_assistant.llm import tool_file_name
from tests.harness.tool_files import write_tool

from .conftest import DOMAIN, Setup
from .test_assist_api import assist_api


async def run_tool(hass: HomeAssistant, data: dict) -> dict:
    return await hass.services.async_call(
        DOMAIN, "run_tool", data, blocking=True, return_response=True
    )


async def test_run_tool_response_data(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    assert await run_tool(
        hass, {"tool": "weather", "arguments": {"place": "Rome", "days": 3}}
    ) == {"result": "Weather in Rome in 3 days: sunny"}
    assert await run_tool(
        hass, {"tool": "weather", "arguments": '{"place": "Oslo"}'}
    ) == {"result": "Weather in Oslo in 0 days: sunny"}
    assert await run_tool(hass, {"tool": "weather"}) == {
        "result": "Weather in Bari in 0 days: sunny"
    }


async def assert_refused(
    hass: HomeAssistant, data: dict, key: str, placeholders: dict[str, str]
) -> str:
    """Assert run_tool raises the translated validation error; return its text."""
    with pytest.raises(ServiceValidationError) as raised:
        await run_tool(hass, data)
    assert raised.value.translation_domain == DOMAIN
    assert raised.value.translation_key == key
    assert raised.value.translation_placeholders == placeholders
    return str(raised.value)


async def test_run_tool_wrong_calls_raise(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    message = await assert_refused(
        hass,
        {"tool": "forecast"},
        "unknown_tool",
        {"tool": "forecast", "tools": "weather"},
    )
    assert message == (
        "There is no tool forecast in the desktop_assistant config folder "
        "(tools: weather)"
    )
    message = await assert_refused(
        hass,
        {"tool": "weather", "arguments": "{place: Rome}"},
        "invalid_arguments",
        {
            "tool": "weather",
            "error": "arguments are not valid JSON: Expecting property name "
            "enclosed in double quotes (line 1, column 2)",
        },
    )
    assert message.startswith("The arguments for the tool weather do not fit it: ")
    await assert_refused(
        hass,
        {"tool": "weather", "arguments": ["Rome"]},
        "invalid_arguments",
        {"tool": "weather", "error": "arguments must be a JSON object"},
    )
    await assert_refused(
        hass,
        {"tool": "weather", "arguments": {"days": "two"}},
        "invalid_arguments",
        {
            "tool": "weather",
            "error": "parameter 'days' must be an integer, got \"two\"",
        },
    )
    # The next call works.
    assert await run_tool(hass, {"tool": "weather", "arguments": {"days": 2}}) == {
        "result": "Weather in Bari in 2 days: sunny"
    }


async def test_run_tool_failure_is_response_data(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    response = await run_tool(
        hass, {"tool": "weather", "arguments": {"place": "Atlantis"}}
    )
    assert response["result"].startswith("error:")
    assert "no such city: Atlantis" in response["result"]


async def test_broken_file_raises_a_repairs_issue(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    write_tool(
        tool_folder,
        "search",
        """
        description = "Search"
        command = ["search.sh", "{query}"]
        timeout = "fast"
        """,
    )
    await setup_integration()
    issue = ir.async_get(hass).async_get_issue(DOMAIN, "invalid_file_tools_search_toml")
    assert issue is not None
    assert issue.translation_key == "invalid_tool_file"
    assert issue.severity == ir.IssueSeverity.ERROR
    assert issue.translation_placeholders == {
        "file": "tools/search.toml",
        "problems": "command[1]: {query} names no parameter (params: none); "
        "timeout: must be a number of seconds",
    }
    # The other tools load.
    assert await run_tool(
        hass, {"tool": "weather", "arguments": {"place": "Rome"}}
    ) == {"result": "Weather in Rome in 0 days: sunny"}
    await assert_refused(
        hass, {"tool": "search"}, "unknown_tool", {"tool": "search", "tools": "weather"}
    )


async def test_config_file_issue(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    (tool_folder / "config.toml").write_text("[env]\nAPI_KEY = 12345\n")
    await setup_integration()
    issue = ir.async_get(hass).async_get_issue(DOMAIN, "invalid_file_config_toml")
    assert issue is not None
    assert issue.translation_key == "invalid_config_file"
    assert issue.translation_placeholders == {
        "file": "config.toml",
        "problems": "env.API_KEY: must be a string",
    }


async def test_reload_reads_the_folder_again(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    write_tool(tool_folder, "now", 'description = "Date"\ncommand = ["echo", "{x}"]\n')
    await setup_integration()
    issues = ir.async_get(hass)
    assert issues.async_get_issue(DOMAIN, "invalid_file_tools_now_toml") is not None

    # Fix one tool, remove another, add a third.
    write_tool(
        tool_folder, "now", 'description = "Date"\ncommand = ["echo", "today"]\n'
    )
    (tool_folder / "tools" / "weather.toml").unlink()
    write_tool(
        tool_folder, "moon", 'description = "Moon"\ncommand = ["echo", "full"]\n'
    )
    await hass.services.async_call(DOMAIN, "reload", blocking=True)

    assert issues.async_get_issue(DOMAIN, "invalid_file_tools_now_toml") is None
    assert await run_tool(hass, {"tool": "now"}) == {"result": "today"}
    await assert_refused(
        hass,
        {"tool": "weather"},
        "unknown_tool",
        {"tool": "weather", "tools": "moon, now"},
    )
    intent_types = {handler.intent_type for handler in intent.async_get(hass)}
    assert {"DesktopAssistantNow", "DesktopAssistantMoon"} <= intent_types
    assert "DesktopAssistantWeather" not in intent_types
    api = await assist_api(hass)
    assert sorted(tool.name for tool in api.tools if tool_file_name(tool)) == [
        "desktop_assistant__moon",
        "desktop_assistant__now",
    ]
    result = await api.async_call_tool(llm.ToolInput("desktop_assistant__moon", {}))
    assert result.data == {"result": "full"}


async def test_issue_clears_when_the_broken_file_is_removed(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    write_tool(tool_folder, "Bad-Name", 'description = "x"\ncommand = ["date"]\n')
    await setup_integration()
    issues = ir.async_get(hass)
    issue_id = "invalid_file_tools_bad_name_toml"
    assert issues.async_get_issue(DOMAIN, issue_id) is not None
    (tool_folder / "tools" / "Bad-Name.toml").unlink()
    await hass.services.async_call(DOMAIN, "reload", blocking=True)
    assert issues.async_get_issue(DOMAIN, issue_id) is None


async def test_actions_and_issues_are_described(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    descriptions = await async_get_all_descriptions(hass)
    assert set(descriptions[DOMAIN]["run_tool"]["fields"]) == {"tool", "arguments"}
    assert descriptions[DOMAIN]["run_tool"]["response"] == {"optional": True}
    assert descriptions[DOMAIN]["reload"]["fields"] == {}
    services = await async_get_translations(hass, "en", "services", {DOMAIN})
    assert services[f"component.{DOMAIN}.services.run_tool.name"] == "Run tool"
    assert services[f"component.{DOMAIN}.services.reload.name"] == "Reload tools"
    texts = await async_get_translations(hass, "en", "issues", {DOMAIN})
    title = texts[f"component.{DOMAIN}.issues.invalid_tool_file.title"]
    assert title.format(file="tools/x.toml") == "Tool file tools/x.toml is disabled"
    description = texts[f"component.{DOMAIN}.issues.invalid_config_file.description"]
    assert "{file}" in description and "{problems}" in description
    icons = await async_get_icons(hass, "services", [DOMAIN])
    assert icons[DOMAIN] == {
        "delete_conversations": {"service": "mdi:delete-clock"},
        "install_examples": {"service": "mdi:download"},
        "reload": {"service": "mdi:reload"},
        "run_nightly": {"service": "mdi:weather-night"},
        "run_tool": {"service": "mdi:tools"},
        "wake_server": {"service": "mdi:desktop-tower-monitor"},
    }


async def test_tools_get_home_assistants_time_zone_beneath_env(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    # `date` and the example tools read times in TZ's zone: the household's.
    write_tool(
        tool_folder,
        "zone",
        """
        description = "The time zone a tool sees."
        command = ["printenv", "TZ"]
        """,
    )
    await hass.config.async_update(time_zone="Pacific/Auckland")
    await setup_integration()
    assert await run_tool(hass, {"tool": "zone"}) == {"result": "Pacific/Auckland"}
    # Read at each run: a zone changed in HA's settings counts at once.
    await hass.config.async_update(time_zone="America/Lima")
    assert await run_tool(hass, {"tool": "zone"}) == {"result": "America/Lima"}
    # config.toml's [env] has the last word.
    (tool_folder / "config.toml").write_text(
        'shown = ["TZ"]\n[env]\nTZ = "Asia/Tokyo"\n'
    )
    await hass.services.async_call(DOMAIN, "reload", blocking=True)
    assert await run_tool(hass, {"tool": "zone"}) == {"result": "Asia/Tokyo"}
