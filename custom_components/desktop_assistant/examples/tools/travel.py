#!/usr/bin/env python3
"""Driving time with traffic from TomTom: now, or when to leave to arrive in time.

travel.py ORIGIN DESTINATION ARRIVE_AT
  ORIGIN       a place name, address, point of interest or "lat,lon";
               empty for TRAVEL_HOME
  DESTINATION  the same kinds of place
  ARRIVE_AT    empty: leave now, on live traffic; else the latest arrival,
               "HH:MM" (today) or "YYYY-MM-DD HH:MM", in local time unless it
               has an offset; it gives the latest departure on predicted traffic

Environment:
  TOMTOM_API_KEY  key with the Search and Routing APIs enabled (required)
  TRAVEL_HOME     the origin when none is given (optional)
  TOMTOM_URL      the service, default https://api.tomtom.com
  TZ              the local time zone (default: the system's)

The answer names the places TomTom matched, so a wrong match shows.
The key is sent as TomTom requires, in the URL, and never printed.
"""

from dataclasses import dataclass
from datetime import date, datetime, time, tzinfo
import html
import os
import re
from typing import Any
import urllib.parse

from helperlib import HelperError, get_json, keep_secret, local_zone, localize, now, run

SERVICE = "TomTom"
DEFAULT_URL = "https://api.tomtom.com"
CLOCK = re.compile(r"(\d{1,2})[:.](\d{2})")
COORDINATES = re.compile(
    r"\s*([-+]?\d{1,2}(?:\.\d+)?)\s*,\s*([-+]?\d{1,3}(?:\.\d+)?)\s*"
)


@dataclass(frozen=True)
class Place:
    """A place TomTom matched (or coordinates given as they are)."""

    name: str
    lat: float
    lon: float

    @property
    def point(self) -> str:
        """The place as TomTom's `lat,lon`."""
        return f"{self.lat:.6f},{self.lon:.6f}"


def main(arguments: list[str]) -> str:
    """Answer how long the drive takes, or when to leave."""
    origin_text, destination_text, arrive_text = (
        [argument.strip() for argument in arguments] + ["", "", ""]
    )[:3]
    key = keep_secret(os.environ.get("TOMTOM_API_KEY", "").strip())
    if not key:
        raise HelperError("TOMTOM_API_KEY is not set: add it to [env] in config.toml")
    origin_text = origin_text or os.environ.get("TRAVEL_HOME", "").strip()
    if not origin_text:
        raise HelperError("no origin: say where from, or set TRAVEL_HOME in [env]")
    if not destination_text:
        raise HelperError("no destination: say where to")
    zone = local_zone()
    arrive_at = parse_arrival(arrive_text, zone) if arrive_text else None
    api = TomTom(os.environ.get("TOMTOM_URL") or DEFAULT_URL, key)
    origin = api.place(origin_text)
    destination = api.place(destination_text, near=origin)
    summary = api.route(origin, destination, arrive_at)
    return describe(origin, destination, summary, arrive_at, zone)


def parse_arrival(text: str, zone: tzinfo | None) -> datetime:
    """Read the latest arrival; a time in the past is refused."""
    current = now(zone)
    try:
        if match := CLOCK.fullmatch(text):
            wall = datetime.combine(current.date(), time(int(match[1]), int(match[2])))
            wanted = localize(wall, zone)
        else:
            parsed = datetime.fromisoformat(text)
            wanted = parsed if parsed.tzinfo else localize(parsed, zone)
    except ValueError:
        raise HelperError(
            f"arrive_at must be a time like 09:00 or 2026-10-22 09:00, got {text!r}"
        ) from None
    if wanted <= current:
        raise HelperError(
            f"{text} is in the past: give a later time (with a date for another day)"
        )
    return wanted


class TomTom:
    """TomTom's Search and Routing APIs, with their errors in plain words."""

    def __init__(self, base: str, key: str) -> None:
        self.base = base.rstrip("/")
        self.key = key

    def get(self, path: str, parameters: dict[str, str], what: str) -> dict[str, Any]:
        """GET a TomTom path; raise HelperError on any answer but a 200."""
        query = urllib.parse.urlencode({"key": self.key, **parameters})
        status, data = get_json(f"{self.base}{path}?{query}", SERVICE)
        if status == 200 and isinstance(data, dict):
            return data
        message = error_message(data)
        if status in (401, 403):
            raise HelperError(f"TomTom refused the API key: {message or status}")
        if status == 429:
            raise HelperError("TomTom says too many requests: try again later")
        if status == 400 and what == "route":
            raise HelperError(f"TomTom found no route: {message or 'bad request'}")
        raise HelperError(
            f"TomTom answered HTTP {status} to the {what}: {message}".rstrip(": ")
        )

    def place(self, text: str, near: Place | None = None) -> Place:
        """Return the place TomTom matches best; coordinates are taken as they are."""
        if match := COORDINATES.fullmatch(text):
            lat, lon = float(match[1]), float(match[2])
            if abs(lat) <= 90 and abs(lon) <= 180:
                return Place(f"{lat:g},{lon:g}", lat, lon)
        parameters = {"limit": "1"}
        if near is not None:
            # Nearer matches first: "the airport" is the one close to the origin.
            parameters |= {"lat": f"{near.lat:.6f}", "lon": f"{near.lon:.6f}"}
        path = f"/search/2/search/{urllib.parse.quote(text, safe='')}.json"
        data = self.get(path, parameters, "place search")
        results = data.get("results")
        if not results:
            raise HelperError(f"TomTom found no place called {text!r}")
        try:
            first = results[0]
            position = first["position"]
            return Place(
                place_name(first), float(position["lat"]), float(position["lon"])
            )
        except (KeyError, TypeError, ValueError, IndexError):
            raise HelperError(
                "TomTom sent a search answer in an unknown shape"
            ) from None

    def route(
        self, origin: Place, destination: Place, arrive_at: datetime | None
    ) -> dict[str, Any]:
        """Return the route summary: live traffic, or predicted for an arrival."""
        parameters = {"traffic": "true", "travelMode": "car"}
        if arrive_at is not None:
            parameters["arriveAt"] = arrive_at.isoformat(timespec="seconds")
        path = f"/routing/1/calculateRoute/{origin.point}:{destination.point}/json"
        data = self.get(path, parameters, "route")
        try:
            summary = data["routes"][0]["summary"]
            int(summary["travelTimeInSeconds"])
        except (KeyError, TypeError, ValueError, IndexError):
            raise HelperError("TomTom sent a route in an unknown shape") from None
        return summary


def error_message(data: object) -> str:
    """Return TomTom's own words from an error body (JSON or an HTML page)."""
    if isinstance(data, dict):
        detailed = data.get("detailedError")
        error = data.get("error")
        for candidate in (
            detailed.get("message") if isinstance(detailed, dict) else None,
            error.get("description") if isinstance(error, dict) else None,
            data.get("errorText"),
        ):
            if isinstance(candidate, str) and candidate.strip():
                return candidate.strip()
        return ""
    if isinstance(data, str):
        return " ".join(html.unescape(re.sub(r"<[^>]*>", " ", data)).split())[:200]
    return ""


def place_name(result: dict[str, Any]) -> str:
    """Return what a search result is called: "Schiphol (Haarlemmermeer)"."""
    address = result.get("address") or {}
    town = address.get("municipality", "")
    if name := (result.get("poi") or {}).get("name"):
        return f"{name} ({town})" if town and town not in name else name
    return address.get("freeformAddress") or town or "an unnamed place"


def describe(
    origin: Place,
    destination: Place,
    summary: dict[str, Any],
    arrive_at: datetime | None,
    zone: tzinfo | None,
) -> str:
    """Put the route summary into a sentence the model can read out."""
    seconds = int(summary["travelTimeInSeconds"])
    delay = int(summary.get("trafficDelayInSeconds", 0))
    length = distance(int(summary.get("lengthInMeters", 0)))
    trip = f"From {origin.name} to {destination.name}"
    traffic = (
        f" including {duration_text(delay)} of traffic delay" if delay >= 60 else ""
    )
    today = now(zone).date()
    if arrive_at is None:
        arrival = clock_text(summary.get("arrivalTime"), today)
        return (
            f"{trip}: {duration_text(seconds)} by car with current traffic{traffic}, "
            f"{length}. Leaving now, you arrive at {arrival}."
        )
    # The departure's day is said only when it is not the arrival's.
    departure = clock_text(summary.get("departureTime"), arrive_at.date())
    return (
        f"{trip}, to arrive by {clock_text(arrive_at, today)}: leave by {departure}. "
        f"The drive takes {duration_text(seconds)} with predicted traffic{traffic}, "
        f"{length}."
    )


def duration_text(seconds: int) -> str:
    """Return "1 hour 12 min", "2 hours", "45 min"."""
    minutes = max(1, round(seconds / 60))
    hours, minutes = divmod(minutes, 60)
    parts = []
    if hours:
        parts.append(f"{hours} hour{'s' if hours > 1 else ''}")
    if minutes:
        parts.append(f"{minutes} min")
    return " ".join(parts)


def distance(meters: int) -> str:
    """Return "41 km", or "8.5 km" below ten."""
    kilometers = meters / 1000
    return f"{kilometers:.1f} km" if kilometers < 10 else f"{round(kilometers)} km"


def clock_text(value: object, day: date) -> str:
    """Return a time as "08:12", with its day when that is not `day`."""
    try:
        moment = (
            value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
        )
    except ValueError:
        return "an unknown time"
    if moment.date() == day:
        return f"{moment:%H:%M}"
    return f"{moment:%H:%M} on {moment:%A} {moment.date().isoformat()}"


if __name__ == "__main__":
    run(main)
