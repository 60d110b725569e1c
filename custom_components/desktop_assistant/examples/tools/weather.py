#!/usr/bin/env python3
"""Current weather, or the forecast for today or tomorrow, from OpenWeatherMap.

weather.py PLACE WHEN
  PLACE  a city ("Rome", "Paris,FR"); empty for home (CITY, COUNTRY)
  WHEN   now, today or tomorrow; empty for now

Environment:
  WEATHER_ENV     file with KEY=, CITY=, COUNTRY=, UNITS= lines (as conky-theme-udt's)
  OWM_URL         the service, default https://api.openweathermap.org
  XDG_CACHE_HOME  home and now are answered from $XDG_CACHE_HOME/udt/weather.json
                  (default ~/.cache) while it is younger than 30 minutes

Prints a short summary: place, conditions, temperature, min/max, wind.
"""

from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
import json
import os
from pathlib import Path
import time
from typing import Any
import urllib.parse

from helperlib import HelperError, cache_home, get_json, keep_secret, run

SERVICE = "OpenWeatherMap"
DEFAULT_URL = "https://api.openweathermap.org"
CACHE_MAX_AGE = 30 * 60
WHEN = ("now", "today", "tomorrow")
# Temperature unit, and the wind's: (unit, factor from what the API sends).
UNITS = {
    "metric": ("°C", "km/h", 3.6),
    "imperial": ("°F", "mph", 1.0),
    "standard": ("K", "m/s", 1.0),
}
COMPASS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")


@dataclass(frozen=True)
class Settings:
    """What the WEATHER_ENV file says; the key is empty when there is none."""

    key: str = ""
    city: str = ""
    country: str = ""
    units: str = "metric"

    @property
    def home(self) -> str:
        """The home place as OpenWeatherMap's `q` parameter."""
        return f"{self.city},{self.country}" if self.country else self.city


def main(arguments: list[str]) -> str:
    """Answer one question about the weather."""
    place = (arguments[0] if arguments else "").strip()
    when = (arguments[1] if len(arguments) > 1 else "").strip().lower() or "now"
    if when not in WHEN:
        raise HelperError(f"when must be now, today or tomorrow, got {when!r}")
    settings = read_settings()
    if not place and when == "now" and (cached := read_fresh_cache()) is not None:
        return describe_current(cached, settings.units)
    if not settings.key:
        raise HelperError(
            "no OpenWeatherMap key: set WEATHER_ENV in [env] to a file with KEY=..."
        )
    if not place:
        if not settings.city:
            raise HelperError("no home city: add CITY= to the WEATHER_ENV file")
        place = settings.home
    if when == "now":
        return describe_current(fetch("weather", place, settings), settings.units)
    forecast = fetch("forecast", place, settings)
    if summary := describe_day(forecast, when, settings.units):
        return summary
    # Late in the day no 3-hour slot of today is left: say how it is now.
    return describe_current(fetch("weather", place, settings), settings.units)


def read_settings() -> Settings:
    """Read the WEATHER_ENV file; missing, it gives no key and metric units."""
    path = os.environ.get("WEATHER_ENV", "")
    if not path:
        return Settings()
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as err:
        raise HelperError(
            f"cannot read the WEATHER_ENV file: {err.strerror or err}"
        ) from None
    values = parse_env_file(text)
    units = values.get("UNITS", "").lower() or "metric"
    if units not in UNITS:
        raise HelperError(
            "UNITS in the WEATHER_ENV file must be metric, imperial or standard"
        )
    return Settings(
        key=keep_secret(values.get("KEY", "")),
        city=values.get("CITY", ""),
        country=values.get("COUNTRY", ""),
        units=units,
    )


def parse_env_file(text: str) -> dict[str, str]:
    """Return NAME=value lines as a shell reads simple ones (export, quotes)."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def read_fresh_cache() -> dict[str, Any] | None:
    """Return conky-theme-udt's cached current weather if younger than 30 minutes."""
    path = cache_home() / "udt" / "weather.json"
    try:
        if time.time() - path.stat().st_mtime > CACHE_MAX_AGE:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "main" in data else None


def fetch(endpoint: str, place: str, settings: Settings) -> dict[str, Any]:
    """Return OpenWeatherMap's /data/2.5/<endpoint> answer for a place."""
    base = os.environ.get("OWM_URL") or DEFAULT_URL
    query = urllib.parse.urlencode(
        {"q": place, "appid": settings.key, "units": settings.units}
    )
    status, data = get_json(f"{base.rstrip('/')}/data/2.5/{endpoint}?{query}", SERVICE)
    message = data.get("message", "") if isinstance(data, dict) else ""
    if status == 200 and isinstance(data, dict):
        return data
    if status in (401, 403):
        raise HelperError(f"OpenWeatherMap refused the API key: {message or status}")
    if status == 404:
        raise HelperError(f"OpenWeatherMap knows no place called {place!r}")
    if status == 429:
        raise HelperError("OpenWeatherMap says too many requests: try again later")
    raise HelperError(f"OpenWeatherMap answered HTTP {status} {message}".rstrip())


def describe_current(data: dict[str, Any], units: str) -> str:
    """Say what /data/2.5/weather (or the cache) reports, in one line."""
    try:
        main = data["main"]
        place = place_name(data.get("name", ""), data.get("sys", {}).get("country"))
        parts = [
            conditions(data.get("weather", [])),
            f"{temperature(main['temp'], units)}"
            f" (feels like {temperature(main['feels_like'], units)})",
            f"min {temperature(main['temp_min'], units)},"
            f" max {temperature(main['temp_max'], units)}",
            f"humidity {main['humidity']}%",
            wind(data.get("wind", {}), units),
        ]
    except (KeyError, TypeError, AttributeError):
        raise HelperError("OpenWeatherMap sent weather in an unknown shape") from None
    return f"{place} now: " + ", ".join(parts)


def describe_day(data: dict[str, Any], when: str, units: str) -> str | None:
    """Summarize the 3-hour slots of today or tomorrow; None when none is left."""
    try:
        city = data["city"]
        offset = timezone(timedelta(seconds=city.get("timezone", 0)))
        today = datetime.now(offset).date()
        day = today + timedelta(days=1) if when == "tomorrow" else today
        slots = [
            slot
            for slot in data["list"]
            if datetime.fromtimestamp(slot["dt"], offset).date() == day
        ]
        if not slots:
            return None
        low = min(slot["main"]["temp_min"] for slot in slots)
        high = max(slot["main"]["temp_max"] for slot in slots)
        strongest = max(slots, key=lambda slot: slot.get("wind", {}).get("speed", 0))
        rain = max(slot.get("pop", 0) for slot in slots)
        names = [
            item["description"] for slot in slots for item in slot.get("weather", [])
        ]
        place = place_name(city.get("name", ""), city.get("country"))
    except (KeyError, TypeError, ValueError, AttributeError):
        raise HelperError(
            "OpenWeatherMap sent a forecast in an unknown shape"
        ) from None
    parts = [
        day_conditions(names),
        f"min {temperature(low, units)}, max {temperature(high, units)}",
        wind(strongest.get("wind", {}), units, prefix="wind up to"),
        f"chance of rain or snow {round(rain * 100)}%",
    ]
    return f"{place} {when} ({day_label(day)}): " + ", ".join(parts)


def place_name(name: str, country: str | None) -> str:
    """Return "Rome, IT" (or what there is of it)."""
    return ", ".join(part for part in (name, country) if part) or "unknown place"


def conditions(weather: list[dict[str, Any]]) -> str:
    """Return the descriptions of a `weather` list: "light rain, mist"."""
    return ", ".join(item["description"] for item in weather) or "no conditions given"


def day_conditions(names: list[str]) -> str:
    """Return the day's conditions in order of time, the most frequent three."""
    common = {name for name, _ in Counter(names).most_common(3)}
    ordered = list(dict.fromkeys(name for name in names if name in common))
    return ", then ".join(ordered) or "no conditions given"


def temperature(value: float, units: str) -> str:
    """Return a temperature for speech: whole degrees with the unit."""
    return f"{round(value)} {UNITS[units][0]}"


def wind(data: dict[str, Any], units: str, prefix: str = "wind") -> str:
    """Return "wind 13 km/h from SW" from an OpenWeatherMap `wind` object."""
    _, unit, factor = UNITS[units]
    text = f"{prefix} {round(data.get('speed', 0) * factor)} {unit}"
    if (degrees := data.get("deg")) is not None:
        text += f" from {COMPASS[round(degrees / 45) % 8]}"
    return text


def day_label(day: date) -> str:
    """Return "Thursday 2026-10-22"."""
    return f"{day:%A} {day.isoformat()}"


if __name__ == "__main__":
    run(main)
