"""weather.py against an OpenWeatherMap stand-in: current, forecast, cache, faults."""

from datetime import date, datetime, timedelta
import json
import os
from pathlib import Path
import time

import pytest

from tests.harness.calendar_tools import on_one_day
from tests.harness.ports import closed_port_url
from tests.harness.web_stand_ins import (
    OSLO,
    OWM_KEY,
    ROME,
    OpenWeatherMap,
    Slot,
    current_weather,
)

from .conftest import ExampleFolder

ENV_FILE = f"""\
# conky-theme-udt: OpenWeatherMap
export KEY="{OWM_KEY}"
CITY='Oslo'
COUNTRY=NO

UNITS=metric
"""
ROME_NOW = (
    "Rome, IT now: clear sky, 18 °C (feels like 18 °C), min 17 °C, max 19 °C, "
    "humidity 63%, wind 13 km/h from SW"
)
OSLO_NOW = (
    "Oslo, NO now: light snow, -3 °C (feels like -7 °C), min -4 °C, max -1 °C, "
    "humidity 86%, wind 15 km/h from N"
)


def rome_today() -> date:
    return datetime.now(ROME.zone).date()


def day_slots(day: date) -> list[Slot]:
    """A day of 3-hour slots: rain, then clouds, then clear."""
    kinds = ["light rain"] * 2 + ["overcast clouds"] * 2 + ["clear sky"] * 2
    kinds += ["few clouds", "clear sky"]
    return [
        Slot(
            day,
            hour,
            kind,
            9.2 + index,
            10.1 + index,
            2.0 + index / 2,
            270,
            0.8 - index / 10,
        )
        for index, (hour, kind) in enumerate(zip(range(0, 24, 3), kinds, strict=True))
    ]


def other_slot(day: date, hour: int) -> Slot:
    """A slot whose values would show if it were counted in the wrong day."""
    return Slot(day, hour, "thunderstorm", -20.0, 40.0, 30.0, 90, 1.0)


@pytest.fixture
def weather(
    example_folder: ExampleFolder, owm: OpenWeatherMap, tmp_path: Path
) -> ExampleFolder:
    env_file = tmp_path / "udt" / "weather.env"
    env_file.parent.mkdir()
    env_file.write_text(ENV_FILE)
    example_folder.env |= {"WEATHER_ENV": str(env_file), "OWM_URL": owm.url}
    owm.cities = {"rome": ROME, "oslo,no": OSLO}
    return example_folder


def write_env_file(folder: ExampleFolder, text: str) -> None:
    """Replace the WEATHER_ENV file's text."""
    Path(folder.env["WEATHER_ENV"]).write_text(text)


def write_cache(folder: ExampleFolder, age: float) -> None:
    """Write conky-theme-udt's cache of Oslo's current weather, `age` seconds old."""
    cache = Path(folder.env["XDG_CACHE_HOME"]) / "udt" / "weather.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps(current_weather(OSLO)))
    written = time.time() - age
    os.utime(cache, (written, written))


async def test_current_weather_of_a_place(
    weather: ExampleFolder, owm: OpenWeatherMap
) -> None:
    assert await weather.run("weather", {"place": "Rome"}) == ROME_NOW
    (request,) = owm.requests
    assert request == {
        "path": "/data/2.5/weather",
        "q": "Rome",
        "appid": OWM_KEY,
        "units": "metric",
    }


async def test_home_now_comes_from_a_fresh_cache(
    weather: ExampleFolder, owm: OpenWeatherMap
) -> None:
    write_cache(weather, age=20 * 60)

    assert await weather.run("weather", {"when": "now"}) == OSLO_NOW
    assert owm.requests == []


@pytest.mark.parametrize("cache_age", [None, 31 * 60])
async def test_home_now_without_a_fresh_cache_asks_for_home(
    weather: ExampleFolder, owm: OpenWeatherMap, cache_age: float | None
) -> None:
    if cache_age is not None:
        write_cache(weather, cache_age)

    assert await weather.run("weather") == OSLO_NOW
    assert [(request["path"], request["q"]) for request in owm.requests] == [
        ("/data/2.5/weather", "Oslo,NO")
    ]


async def test_forecast_for_tomorrow(
    weather: ExampleFolder, owm: OpenWeatherMap
) -> None:

    async def ask_tomorrow(today: date) -> str:
        owm.requests.clear()
        owm.slots = [
            other_slot(today, 21),
            *day_slots(today + timedelta(days=1)),
            other_slot(today + timedelta(days=2), 0),
        ]
        return await weather.run("weather", {"place": "Rome", "when": "tomorrow"})

    today, answer = await on_one_day(ROME.zone, ask_tomorrow)
    tomorrow = today + timedelta(days=1)
    assert answer == (
        f"Rome, IT tomorrow ({tomorrow:%A} {tomorrow}): "
        "light rain, then overcast clouds, then clear sky, min 9 °C, max 17 °C, "
        "wind up to 20 km/h from W, chance of rain or snow 80%"
    )
    (request,) = owm.requests
    assert (request["path"], request["q"]) == ("/data/2.5/forecast", "Rome")


async def test_forecast_for_today(weather: ExampleFolder, owm: OpenWeatherMap) -> None:

    async def ask_today(today: date) -> str:
        owm.slots = [
            Slot(today, 18, "mist", 6.4, 7.9, 1.5, 180, 0.1),
            Slot(today, 21, "fog", 5.6, 6.2, 1.0, 160, 0.15),
            other_slot(today + timedelta(days=1), 0),
        ]
        return await weather.run("weather", {"place": "Rome", "when": "Today"})

    today, answer = await on_one_day(ROME.zone, ask_today)
    assert answer == (
        f"Rome, IT today ({today:%A} {today}): mist, then fog, min 6 °C, max 8 °C, "
        "wind up to 5 km/h from S, chance of rain or snow 15%"
    )


async def test_today_with_no_slot_left_says_how_it_is_now(
    weather: ExampleFolder, owm: OpenWeatherMap
) -> None:
    owm.slots = day_slots(rome_today() + timedelta(days=1))

    assert await weather.run("weather", {"place": "Rome", "when": "today"}) == ROME_NOW
    assert [request["path"] for request in owm.requests] == [
        "/data/2.5/forecast",
        "/data/2.5/weather",
    ]


async def test_imperial_units(weather: ExampleFolder, owm: OpenWeatherMap) -> None:
    write_env_file(weather, ENV_FILE.replace("metric", "imperial"))

    result = await weather.run("weather", {"place": "Rome"})

    assert result.endswith("max 19 °F, humidity 63%, wind 4 mph from SW")
    assert owm.requests[0]["units"] == "imperial"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"place": "Atlantis"},
            "error: OpenWeatherMap knows no place called 'Atlantis'",
        ),
        (
            {"place": "Rome", "when": "next week"},
            "error: when must be now, today or tomorrow, got 'next week'",
        ),
    ],
)
async def test_bad_place_or_day(
    weather: ExampleFolder, arguments: dict[str, str], expected: str
) -> None:
    assert await weather.run("weather", arguments) == expected


async def test_rejected_key_is_not_repeated(
    weather: ExampleFolder, owm: OpenWeatherMap
) -> None:
    owm.key = "another-key"
    result = await weather.run("weather", {"place": "Rome", "when": "tomorrow"})

    assert result == (
        "error: OpenWeatherMap refused the API key: Invalid API key. "
        "Please see https://openweathermap.org/faq#error401 for more info."
    )
    assert OWM_KEY not in result


async def test_slow_service(weather: ExampleFolder, owm: OpenWeatherMap) -> None:
    # Far past the deadline: only the deadline can end the wait this soon.
    owm.delay = 60
    weather.env["TOOL_WEB_TIMEOUT"] = "0.5"

    assert await weather.run("weather", {"place": "Rome"}) == (
        "error: OpenWeatherMap did not answer within 0.5 s"
    )


async def test_unreachable_service(weather: ExampleFolder) -> None:
    weather.env["OWM_URL"] = closed_port_url()

    assert await weather.run("weather", {"place": "Rome"}) == (
        "error: cannot reach OpenWeatherMap: Connection refused"
    )


async def test_without_settings(example_folder: ExampleFolder, tmp_path: Path) -> None:
    assert await example_folder.run("weather", {"place": "Rome"}) == (
        "error: no OpenWeatherMap key: set WEATHER_ENV in [env] to a file with KEY=..."
    )
    env_file = tmp_path / "weather.env"
    env_file.write_text(f"KEY={OWM_KEY}\n")
    example_folder.env["WEATHER_ENV"] = str(env_file)
    assert await example_folder.run("weather") == (
        "error: no home city: add CITY= to the WEATHER_ENV file"
    )
