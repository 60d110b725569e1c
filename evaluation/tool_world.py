"""The world of scripts/eval-tools's questions: web services and tool files.

The example tool files (examples/tools/) are copied into the config folder
with a config.toml pointing them at local stand-ins of their web services
(OpenWeatherMap, SearXNG, TomTom), which answer in the real services' wire
format; the calendar is a vdir written for the run, home is Oslo and the
trip starts in Utrecht.
"""

from collections.abc import AsyncIterator
import contextlib
from datetime import date, timedelta
import json
from pathlib import Path
import shutil

from homeassistant.util import dt as dt_util

from tests.harness.web_stand_ins import (
    OSLO,
    OWM_KEY,
    ROME,
    TOMTOM_KEY,
    OpenWeatherMap,
    SearXNG,
    Slot,
    TomTom,
    current_weather,
    searxng_result,
    serving,
    tomtom_geography,
    tomtom_poi,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tools"
SCHIPHOL = tomtom_poi("Amsterdam Airport Schiphol", "Haarlemmermeer", 52.30907, 4.76278)


@contextlib.asynccontextmanager
async def web_services() -> AsyncIterator[dict[str, str]]:
    """Serve the stand-ins with the run's data; yield the URLs for [env]."""
    tomorrow = dt_util.now(ROME.zone).date() + timedelta(days=1)
    async with (
        serving(OpenWeatherMap()) as owm,
        serving(SearXNG()) as searxng,
        serving(TomTom()) as tomtom,
    ):
        owm.cities = {"rome": ROME, "rome,it": ROME, "oslo": OSLO, "oslo,no": OSLO}
        owm.slots = [
            Slot(tomorrow, hour, "light rain", 9.0, 12.0, 3.5, 240, 0.8)
            for hour in range(0, 24, 3)
        ]
        searxng.results = [
            searxng_result(
                1,
                "Kokoro TTS - Hugging Face",
                "Kokoro is an open-weight TTS model with 82 million parameters.",
                "https://huggingface.co/hexgrad/Kokoro-82M",
            )
        ]
        tomtom.places = {
            name: [SCHIPHOL]
            for name in (
                "schiphol",
                "schiphol airport",
                "airport schiphol",
                "amsterdam airport schiphol",
                "schiphol airport, amsterdam",
                "amsterdam schiphol airport",
            )
        } | {"utrecht": [tomtom_geography("Utrecht", 52.09083, 5.12222)]}
        yield {
            "OWM_URL": owm.url,
            "SEARXNG_URL": searxng.url,
            "TOMTOM_URL": tomtom.url,
        }


# Long: each file of the config folder in turn; the calendar event is a
# file's lines.
def write_config_folder(
    root: Path,
    work: Path,
    urls: dict[str, str],
    zone: str,
    tomorrow: date,
    *,
    examples: bool = True,
) -> None:
    """The example tools and a config.toml pointing them at the stand-ins."""
    shutil.copytree(
        EXAMPLES, root / "tools", ignore=shutil.ignore_patterns("__pycache__")
    )
    if not examples:
        for spec in (root / "tools").glob("*.toml"):
            lines = spec.read_text().splitlines(keepends=True)
            spec.write_text("".join(x for x in lines if not x.startswith("examples")))
    calendar = work / "calendars" / "personal" / "lunch.ics"
    calendar.parent.mkdir(parents=True)
    calendar.write_bytes(
        "\r\n".join(
            [
                "BEGIN:VCALENDAR",
                "VERSION:2.0",
                "PRODID:-//desktop_assistant//eval-tools//EN",
                "BEGIN:VEVENT",
                "UID:lunch@eval-tools",
                f"DTSTART:{tomorrow:%Y%m%d}T123000",
                f"DTEND:{tomorrow:%Y%m%d}T133000",
                "SUMMARY:Team lunch",
                "END:VEVENT",
                "END:VCALENDAR",
                "",
            ]
        ).encode()
    )
    weather_env = work / "weather.env"
    weather_env.write_text(f"KEY={OWM_KEY}\nCITY=Oslo\nCOUNTRY=NO\nUNITS=metric\n")
    # Home, now: from conky-theme-udt's fresh cache, as at a household.
    cache = work / "cache" / "udt" / "weather.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps(current_weather(OSLO)))
    env = urls | {
        "TZ": zone,
        "HOME": str(work / "home"),
        "XDG_CACHE_HOME": str(work / "cache"),
        "CALENDAR_DIR": str(work / "calendars"),
        "WEATHER_ENV": str(weather_env),
        "TOMTOM_API_KEY": TOMTOM_KEY,
        "TRAVEL_HOME": "Utrecht",
        "TOOL_WEB_TIMEOUT": "5",
    }
    # Answers may name home and the time zone, as config.toml suggests.
    lines = ['shown = ["TZ", "TRAVEL_HOME"]', "[env]"] + [
        f"{name} = {json.dumps(value)}" for name, value in env.items()
    ]
    (root / "config.toml").write_text("\n".join(lines) + "\n")
