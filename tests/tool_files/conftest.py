"""Fixtures for tests of the tools inside Home Assistant."""

from collections.abc import Awaitable, Callable
from pathlib import Path

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest

from tests.harness.tool_files import write_script, write_tool

DOMAIN = "desktop_assistant"

type Setup = Callable[[], Awaitable[None]]

# Says where it is (argument or nothing) the way a weather script would.
WEATHER_TOOL = """
    description = "Current weather. Leave place empty for home."
    command = ["weather.sh", "{place}", "{days}"]
    announce.en = ["Checking the weather."]

    [params.place]
    type = "string"
    description = "City name, empty for home"

    [params.days]
    type = "integer"
    description = "Days ahead, empty for now"
"""
WEATHER_SH = """
    #!/bin/sh
    case "$1" in
      Atlantis) echo "no such city: $1" >&2; exit 4 ;;
    esac
    echo "Weather in ${1:-$HOME_CITY} in ${2:-0} days: sunny"
"""


@pytest.fixture
def tool_folder(hass: HomeAssistant) -> Path:
    """`<config dir>/desktop_assistant`, with the weather tool and its script."""
    folder = Path(hass.config.path(DOMAIN))
    write_tool(folder, "weather", WEATHER_TOOL)
    write_script(folder / "tools" / "weather.sh", WEATHER_SH)
    (folder / "config.toml").write_text('[env]\nHOME_CITY = "Bari"\n')
    return folder


@pytest.fixture
def setup_integration(hass: HomeAssistant) -> Setup:
    """Set up the domain (its async_setup) as Home Assistant does at start."""

    async def setup() -> None:
        assert await async_setup_component(hass, "homeassistant", {})
        assert await async_setup_component(hass, DOMAIN, {})
        await hass.async_block_till_done()

    return setup
