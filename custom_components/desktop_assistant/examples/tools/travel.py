#!/usr/bin/env python3
"""Driving time with traffic from TomTom: leaving now, leaving at a time, or arriving by one.

travel.py ORIGIN DESTINATION ARRIVE_AT DEPART_AT
  ORIGIN       a place name, address, point of interest or "lat,lon";
               empty for TRAVEL_HOME
  DESTINATION  the same kinds of place
  ARRIVE_AT    the latest arrival: gives the latest departure
  DEPART_AT    the departure: gives the arrival
               At most one of the two, on predicted traffic; neither: leave
               now, on live traffic. "HH:MM" (today) or "YYYY-MM-DD HH:MM",
               in TZ's zone unless it has an offset; a time past is refused.
               The answer says every time in TZ's zone.

Environment:
  TOMTOM_API_KEY  key with the Search and Routing APIs enabled (required)
  TRAVEL_HOME     the origin when none is given (optional)
  TOMTOM_URL      the service, default https://api.tomtom.com
  TZ              the local time zone (Home Assistant's; else the system's)
  XDG_CACHE_HOME  place lookups are kept in desktop_assistant/travel-places.json
                  there (default ~/.cache): a match for 24 hours, a place not
                  found for 10 minutes. Routes are never kept: traffic changes.

The answer names the places TomTom matched, so a wrong match shows, and
gives the departure and arrival in the local zone. The key is sent as TomTom
requires, in the URL, and is never printed or cached.
"""

import contextlib
from dataclasses import asdict, dataclass
from datetime import date, datetime, time, tzinfo
import html
import json
import os
from pathlib import Path
import re
import time as clock
from typing import Any
import urllib.parse

from helperlib import (
    HelperError,
    cache_home,
    get_json,
    keep_secret,
    local_zone,
    localize,
    now,
    run,
)

SERVICE = "TomTom"
DEFAULT_URL = "https://api.tomtom.com"
CLOCK = re.compile(r"(\d{1,2})[:.](\d{2})")
COORDINATES = re.compile(
    r"\s*([-+]?\d{1,2}(?:\.\d+)?)\s*,\s*([-+]?\d{1,3}(?:\.\d+)?)\s*"
)
CACHE_FILE = Path("desktop_assistant") / "travel-places.json"
# Seconds a lookup is kept: a place for a day, a place not found for 10 min.
FOUND_FOR = 24 * 3600
MISSED_FOR = 10 * 60
# The most lookups the cache file keeps, newest first.
MAX_CACHED = 500
# What each request needs enabled on the key, as TomTom's dashboard names it.
PRODUCTS = {"place search": "Search API", "route": "Routing API"}
# TomTom's words for a key without the product a request needs.
NOT_ENTITLED = "not allowed to access this endpoint"


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


@dataclass(frozen=True)
class When:
    """The time asked about: TomTom's `arriveAt` or `departAt`, and the moment."""

    kind: str
    moment: datetime


def main(arguments: list[str]) -> str:
    """Answer how long the drive takes, when it arrives, or when to leave."""
    origin_text, destination_text, arrive_text, depart_text = (
        [argument.strip() for argument in arguments] + ["", "", "", ""]
    )[:4]
    key = keep_secret(os.environ.get("TOMTOM_API_KEY", "").strip())
    if not key:
        raise HelperError("TOMTOM_API_KEY is not set: add it to [env] in config.toml")
    origin_text = origin_text or os.environ.get("TRAVEL_HOME", "").strip()
    if not origin_text:
        raise HelperError("no origin: say where from, or set TRAVEL_HOME in [env]")
    if not destination_text:
        raise HelperError("no destination: say where to")
    zone = local_zone()
    when = parse_when(arrive_text, depart_text, zone)
    cache = PlaceCache(cache_home() / CACHE_FILE)
    api = TomTom(os.environ.get("TOMTOM_URL") or DEFAULT_URL, key, cache)
    origin = api.place(origin_text)
    destination = api.place(destination_text, near=origin)
    summary = api.route(origin, destination, when)
    return describe(origin, destination, summary, when, zone)


def parse_when(arrive_text: str, depart_text: str, zone: tzinfo | None) -> When | None:
    """Read the arrival or the departure asked for; both at once are refused."""
    # "now" is how a model may well say that the trip starts now.
    if depart_text.casefold() == "now":
        depart_text = ""
    if arrive_text and depart_text:
        raise HelperError(
            "give arrive_at or depart_at, not both: arrive_at is the latest "
            "arrival, depart_at the departure"
        )
    if arrive_text:
        return When("arriveAt", parse_time(arrive_text, "arrive_at", zone))
    if depart_text:
        return When("departAt", parse_time(depart_text, "depart_at", zone))
    return None


def parse_time(text: str, name: str, zone: tzinfo | None) -> datetime:
    """Read a time of today or a date and time; a time in the past is refused."""
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
            f"{name} must be a time like 09:00 or 2026-10-22 09:00, got {text!r}"
        ) from None
    if wanted <= current:
        raise HelperError(
            f"{text} is in the past: give a later time (with a date for another day)"
        )
    return wanted


class PlaceCache:
    """Place lookups kept in a JSON file beside the other tools' caches.

    A file that is missing, broken or cannot be written only costs a lookup.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            text = path.read_text(encoding="utf-8")
            # The places asked about are for the household alone.
            if path.stat().st_mode & 0o077:
                path.chmod(0o600)
            data = json.loads(text)
        except (OSError, ValueError):
            data = {}
        self.entries: dict[str, Any] = data if isinstance(data, dict) else {}

    def get(self, key: str) -> tuple[Place | None] | None:
        """Return (the place, or None when none was found) if still kept; else None.

        An entry of another shape (written by hand, or by another version)
        counts as not kept: it is looked up again and replaced.
        """
        entry = self.entries.get(key)
        try:
            at = entry["at"]
            if isinstance(at, bool) or not isinstance(at, int | float):
                return None
            age = clock.time() - at
            found = entry["place"]
            place = (
                None
                if found is None
                else Place(str(found["name"]), float(found["lat"]), float(found["lon"]))
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        if 0 <= age < (MISSED_FOR if place is None else FOUND_FOR):
            return (place,)
        return None

    def put(self, key: str, place: Place | None) -> None:
        """Keep a lookup's outcome; drop the lookups kept too long."""
        self.entries[key] = {
            "at": clock.time(),
            "place": None if place is None else asdict(place),
        }
        kept = [(k, v) for k, v in self.entries.items() if self.get(k) is not None]
        kept.sort(key=lambda item: item[1]["at"], reverse=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary.unlink(missing_ok=True)
            # Readable by its owner alone from the start, not after a chmod.
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with open(descriptor, "w", encoding="utf-8") as file:
                file.write(json.dumps(dict(kept[:MAX_CACHED])))
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)


class TomTom:
    """TomTom's Search and Routing APIs, with their errors in plain words."""

    def __init__(self, base: str, key: str, cache: PlaceCache) -> None:
        self.base = base.rstrip("/")
        self.key = key
        self.cache = cache

    def get(self, path: str, parameters: dict[str, str], what: str) -> dict[str, Any]:
        """GET a TomTom path; raise HelperError on any answer but a 200."""
        query = urllib.parse.urlencode({"key": self.key, **parameters})
        status, data = get_json(f"{self.base}{path}?{query}", SERVICE)
        if status == 200 and isinstance(data, dict):
            return data
        message = error_message(data)
        if status == 403 and NOT_ENTITLED in message.lower():
            raise HelperError(
                f"the TomTom key is not enabled for the {PRODUCTS[what]} (TomTom: "
                f"{message}). The key is known, its product is missing: add the "
                f"{PRODUCTS[what]} to it in TomTom's developer dashboard"
            )
        if status == 429 or "over qps" in message.lower():
            raise HelperError("TomTom says too many requests: try again later")
        if status in (401, 403):
            raise HelperError(f"TomTom refused the API key: {message or status}")
        if status == 400 and what == "route":
            raise HelperError(f"TomTom found no route: {message or 'bad request'}")
        raise HelperError(
            f"TomTom answered HTTP {status} to the {what}: {message}".rstrip(": ")
        )

    def place(self, text: str, near: Place | None = None) -> Place:
        """Return the place TomTom matches best; coordinates are taken as they are.

        A lookup's outcome is cached (see PlaceCache), per service, words and
        the origin it was looked for near.
        """
        if match := COORDINATES.fullmatch(text):
            lat, lon = float(match[1]), float(match[2])
            if abs(lat) <= 90 and abs(lon) <= 180:
                return Place(f"{lat:g},{lon:g}", lat, lon)
        cache_key = " | ".join(
            [self.base, " ".join(text.casefold().split()), near.point if near else ""]
        )
        if (cached := self.cache.get(cache_key)) is None:
            cached = (self.search(text, near),)
            self.cache.put(cache_key, cached[0])
        if (place := cached[0]) is None:
            raise HelperError(f"TomTom found no place called {text!r}")
        return place

    def search(self, text: str, near: Place | None) -> Place | None:
        """Ask TomTom for the best match; None when it has none."""
        parameters = {"limit": "1"}
        if near is not None:
            # Nearer matches first: "the airport" is the one close to the origin.
            parameters |= {"lat": f"{near.lat:.6f}", "lon": f"{near.lon:.6f}"}
        path = f"/search/2/search/{urllib.parse.quote(text, safe='')}.json"
        data = self.get(path, parameters, "place search")
        results = data.get("results")
        if not results:
            return None
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
        self, origin: Place, destination: Place, when: When | None
    ) -> dict[str, Any]:
        """Return the route summary: live traffic, or predicted for a time."""
        parameters = {"traffic": "true", "travelMode": "car"}
        if when is not None:
            parameters[when.kind] = when.moment.isoformat(timespec="seconds")
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
    when: When | None,
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
    departure = local_time(summary.get("departureTime"), zone)
    arrival = local_time(summary.get("arrivalTime"), zone)
    if when is None:
        return (
            f"{trip}: {duration_text(seconds)} by car with current traffic{traffic}, "
            f"{length}. Leaving now, at {clock_text(departure, today)}, you arrive "
            f"at {clock_text(arrival, today)}."
        )
    drive = (
        f"The drive takes {duration_text(seconds)} with predicted traffic{traffic}, "
        f"{length}."
    )
    # Every time is said in the local zone, the asked one too when it was
    # written with another offset (then saying so).
    asked = in_zone(when.moment, zone)
    local = " local time" if asked.utcoffset() != when.moment.utcoffset() else ""
    # A time's day is said only when it is not the day asked about.
    day = asked.date()
    if when.kind == "arriveAt":
        return (
            f"{trip}, to arrive by {clock_text(asked, today)}{local}: leave by "
            f"{clock_text(departure, day)}, arriving at {clock_text(arrival, day)}. "
            f"{drive}"
        )
    return (
        f"{trip}, leaving at {clock_text(asked, today)}{local}: you arrive at "
        f"{clock_text(arrival, day)}. {drive}"
    )


def local_time(value: object, zone: tzinfo | None) -> datetime | None:
    """Return one of TomTom's times (the origin's zone) in the local zone."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment
    return in_zone(moment, zone)


def in_zone(moment: datetime, zone: tzinfo | None) -> datetime:
    """Return an aware time in the local zone (TZ's, else the system's)."""
    return moment.astimezone(zone) if zone else moment.astimezone()


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


def clock_text(moment: datetime | None, day: date) -> str:
    """Return a time as "08:12", with its day when that is not `day`."""
    if moment is None:
        return "an unknown time"
    if moment.date() == day:
        return f"{moment:%H:%M}"
    return f"{moment:%H:%M} on {moment:%A} {moment.date().isoformat()}"


if __name__ == "__main__":
    run(main)
