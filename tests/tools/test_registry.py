"""The registry: unknown tools, bad arguments, announcements."""

from pathlib import Path

import pytest

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from tests.harness.tool_files import WriteFolder

TOOLS = {
    "count": """
        description = "Count"
        command = ["echo", "{n}", "{ratio}", "{loud}"]
        announce.en = ["Counting."]
        [params.n]
        type = "integer"
        description = "How many"
        [params.ratio]
        type = "number"
        description = "Ratio"
        [params.loud]
        type = "boolean"
        description = "Loud?"
    """,
    "now": """
        description = "Date"
        command = ["echo", "now"]
    """,
    "weather": """
        description = "Weather"
        command = ["echo", "{place}"]
        announce.it = ["Controllo il meteo.", "Guardo fuori."]
        announce.en = ["Checking the weather."]
        [params.place]
        type = "string"
        description = "City"
    """,
}


@pytest.fixture
def registry(write_folder: WriteFolder, folder: Path) -> ToolRegistry:
    write_folder(tools=TOOLS)
    loaded = load_folder(folder)
    assert loaded.problems == ()
    return ToolRegistry(loaded)


def test_tool_list(registry: ToolRegistry) -> None:
    assert [spec.name for spec in registry.tools] == ["count", "now", "weather"]
    weather = registry.get("weather")
    assert weather is not None
    assert weather.description == "Weather"
    assert registry.get("nope") is None


async def test_unknown_tool(registry: ToolRegistry) -> None:
    assert await registry.async_run("forecast", "{}") == (
        "error: unknown tool 'forecast' (tools: count, now, weather)"
    )


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (
            '{"place": ',
            "arguments are not valid JSON: Expecting value (line 1, column 11)",
        ),
        (
            "place=Rome",
            "arguments are not valid JSON: Expecting value (line 1, column 1)",
        ),
        ('["Rome"]', "arguments must be a JSON object"),
        ('"Rome"', "arguments must be a JSON object"),
        ('{"city": "Rome"}', "unknown parameter 'city': weather takes place"),
        (
            '{"place": ["Rome", "Milan"]}',
            'parameter \'place\' must be a string, got ["Rome", "Milan"]',
        ),
    ],
)
async def test_invalid_arguments(
    registry: ToolRegistry, arguments: str, error: str
) -> None:
    assert await registry.async_run("weather", arguments) == f"error: {error}"


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"n": "three"}, "parameter 'n' must be an integer, got \"three\""),
        ({"n": 2.5}, "parameter 'n' must be an integer, got 2.5"),
        ({"n": True}, "parameter 'n' must be an integer, got true"),
        ({"ratio": "fast"}, "parameter 'ratio' must be a number, got \"fast\""),
        ({"loud": "yes"}, "parameter 'loud' must be a boolean, got \"yes\""),
        ({"loud": 1}, "parameter 'loud' must be a boolean, got 1"),
    ],
)
async def test_wrongly_typed_arguments(
    registry: ToolRegistry, arguments: dict, error: str
) -> None:
    assert await registry.async_run("count", arguments) == f"error: {error}"


async def test_typed_arguments(registry: ToolRegistry) -> None:
    assert await registry.async_run(
        "count", '{"n": 3, "ratio": 0.5, "loud": false}'
    ) == ("3 0.5 false")
    assert await registry.async_run("count", {"n": "4", "ratio": 2}) == "4 2"
    # Numbers Python reads but a tool may not are passed as plain decimals.
    for written, passed in (("1_000", "1000.0"), ("١٢", "12.0"), ("-.5", "-.5")):
        assert await registry.async_run("count", {"n": 1, "ratio": written}) == (
            f"1 {passed}"
        )


async def test_no_arguments(registry: ToolRegistry) -> None:
    for arguments in (None, "", "{}", "null", {}):
        assert await registry.async_run("now", arguments) == "now"
    assert await registry.async_run("now", '{"x": 1}') == (
        "error: unknown parameter 'x': now takes no parameters"
    )


def test_announcements(registry: ToolRegistry) -> None:
    assert registry.announcements("weather", "it") == (
        "Controllo il meteo.",
        "Guardo fuori.",
    )
    assert registry.announcements("weather", "de") == ()
    assert registry.announcements("nope", "en") == ()
    # The first called tool that has a phrase for the language speaks.
    assert registry.pick_announcement(["now", "count", "weather"], "en") == "Counting."
    assert registry.pick_announcement(["now", "count", "weather"], "it") in (
        "Controllo il meteo.",
        "Guardo fuori.",
    )
    assert registry.pick_announcement(["now"], "en") is None
    picked = {registry.pick_announcement(["weather"], "it") for _ in range(200)}
    assert picked == {"Controllo il meteo.", "Guardo fuori."}


def test_replace_swaps_the_tools(
    registry: ToolRegistry, write_folder: WriteFolder, folder: Path
) -> None:
    (folder / "tools" / "now.toml").unlink()
    registry.replace(load_folder(folder))
    assert [spec.name for spec in registry.tools] == ["count", "weather"]
