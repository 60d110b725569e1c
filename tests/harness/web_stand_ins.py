"""Local stand-ins for the web services the example tools use, in their wire format.

- OpenWeatherMap: `GET /data/2.5/weather` and `/data/2.5/forecast` (`q`,
  `appid`, `units`); 401 `{"cod":401,"message":"Invalid API key. ..."}`, 404
  `{"cod":"404","message":"city not found"}`.
- SearXNG: `GET /search?q=...&format=json`; 403 (an HTML page) when json is
  not among the instance's formats.
- TomTom: Search `GET /search/2/search/{query}.json` and Routing
  `GET /routing/1/calculateRoute/{lat,lon:lat,lon}/json`; a bad key gets
  403 `{"detailedError":{"code":"Forbidden","message":"You are not allowed
  to access this endpoint"}}`, no route 400 with `detailedError`.

Each records the query of every request and can wait before answering,
send its answer a byte at a time, or pad it (with JSON's own whitespace) to
any size.
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
import time
from typing import Any
from zoneinfo import ZoneInfo

from aiohttp import web

OWM_KEY = "owm-key-3b9f1c2d7e"
TOMTOM_KEY = "tt-key+4c8a/9e1f=="
OWM_INVALID_KEY = {
    "cod": 401,
    "message": "Invalid API key. Please see https://openweathermap.org/faq#error401 for more info.",
}
OWM_NOT_FOUND = {"cod": "404", "message": "city not found"}
# A known key without the product (Search API, Routing API) a request needs.
TOMTOM_NOT_ENTITLED = {
    "detailedError": {
        "code": "Forbidden",
        "message": "You are not allowed to access this endpoint",
    }
}
# A key TomTom does not know, as its API gateway answers it.
TOMTOM_UNKNOWN_KEY = "<h1>Developer Inactive</h1>"
TOMTOM_NO_ROUTE = {
    "formatVersion": "0.0.12",
    "error": {
        "description": "Engine error while executing route request: NO_ROUTE_FOUND"
    },
    "detailedError": {
        "message": "Engine error while executing route request: NO_ROUTE_FOUND",
        "code": "NO_ROUTE_FOUND",
    },
}
SEARXNG_FORBIDDEN = (
    "<!doctype html>\n<html lang=en>\n<title>403 Forbidden</title>\n"
    "<h1>Forbidden</h1>\n<p>You don&#39;t have the permission to access the "
    "requested resource. It is either read-protected or not readable by the "
    "server.</p>\n"
)


@dataclass
class StandIn:
    """A loopback aiohttp server; subclasses add their routes."""

    # Seconds to wait before answering anything.
    delay: float = 0.0
    # Seconds between the bytes of a body, when it is sent a byte at a time.
    drip: float = 0.0
    # Spaces sent after a body.
    padding: int = 0
    # The query of each request, with its path under "path".
    requests: list[dict[str, str]] = field(default_factory=list)
    url: str = ""
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def received(self, request: web.Request) -> dict[str, str]:
        """Record a request and wait the delay (cut short when stopping)."""
        query = dict(request.query) | {"path": request.path}
        self.requests.append(query)
        if self.delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.delay)
        return query

    @web.middleware
    async def shape(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Send an answer slowly (drip) or padded, as a broken service might."""
        response = await handler(request)
        if not (self.drip or self.padding) or not isinstance(response, web.Response):
            return response
        body = bytes(response.body or b"")
        streamed = web.StreamResponse(status=response.status)
        streamed.content_type = response.content_type
        await streamed.prepare(request)
        # The client hangs up on a body it will not read to the end.
        with contextlib.suppress(ConnectionError):
            if self.drip:
                for byte in body:
                    await streamed.write(bytes([byte]))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.stopping.wait(), self.drip)
                    if self.stopping.is_set():
                        return streamed
            else:
                await streamed.write(body)
                spaces = b" " * (1 << 16)
                for _ in range(self.padding >> 16):
                    await streamed.write(spaces)
            await streamed.write_eof()
        return streamed

    async def start(self) -> None:
        app = web.Application(middlewares=[self.shape])
        self.routes(app)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def stop(self) -> None:
        self.stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@contextlib.asynccontextmanager
async def serving[T: StandIn](stand_in: T) -> AsyncIterator[T]:
    """Serve a stand-in on a free loopback port while the block runs."""
    await stand_in.start()
    try:
        yield stand_in
    finally:
        await stand_in.stop()


# --- OpenWeatherMap ---------------------------------------------------------


@dataclass(frozen=True)
class City:
    """A city OpenWeatherMap knows, with its current conditions."""

    id: int
    name: str
    country: str
    lat: float
    lon: float
    # Seconds east of UTC, as OpenWeatherMap's `timezone`.
    utc_offset: int
    description: str
    temp: float
    feels_like: float
    temp_min: float
    temp_max: float
    humidity: int
    wind_speed: float
    wind_deg: int

    @property
    def zone(self) -> timezone:
        return timezone(timedelta(seconds=self.utc_offset))


ROME = City(
    3169070, "Rome", "IT", 41.8947, 12.4839, 3600, "clear sky",
    18.31, 17.88, 16.96, 19.4, 63, 3.6, 240,
)  # fmt: skip
OSLO = City(
    3143244, "Oslo", "NO", 59.9127, 10.7461, 3600, "light snow",
    -2.6, -7.1, -3.9, -1.2, 86, 4.1, 10,
)  # fmt: skip


def current_weather(city: City) -> dict[str, Any]:
    """Return `/data/2.5/weather`'s body for a city."""
    now = int(time.time())
    return {
        "coord": {"lon": city.lon, "lat": city.lat},
        "weather": [
            {"id": 800, "main": "Clear", "description": city.description, "icon": "01d"}
        ],
        "base": "stations",
        "main": {
            "temp": city.temp,
            "feels_like": city.feels_like,
            "temp_min": city.temp_min,
            "temp_max": city.temp_max,
            "pressure": 1019,
            "humidity": city.humidity,
            "sea_level": 1019,
            "grnd_level": 1008,
        },
        "visibility": 10000,
        "wind": {"speed": city.wind_speed, "deg": city.wind_deg},
        "clouds": {"all": 0},
        "dt": now,
        "sys": {
            "type": 2,
            "id": 2037790,
            "country": city.country,
            "sunrise": now - 20000,
            "sunset": now + 12000,
        },
        "timezone": city.utc_offset,
        "id": city.id,
        "name": city.name,
        "cod": 200,
    }


@dataclass(frozen=True)
class Slot:
    """One 3-hour forecast entry: local wall time in the city, and values."""

    day: date
    hour: int
    description: str
    temp_min: float
    temp_max: float
    wind_speed: float
    wind_deg: int
    pop: float


def forecast_entry(city: City, slot: Slot) -> dict[str, Any]:
    """Return one element of `/data/2.5/forecast`'s `list`."""
    moment = datetime(
        slot.day.year, slot.day.month, slot.day.day, slot.hour, tzinfo=city.zone
    )
    temp = round((slot.temp_min + slot.temp_max) / 2, 2)
    return {
        "dt": int(moment.timestamp()),
        "main": {
            "temp": temp,
            "feels_like": temp - 1,
            "temp_min": slot.temp_min,
            "temp_max": slot.temp_max,
            "pressure": 1015,
            "sea_level": 1015,
            "grnd_level": 1003,
            "humidity": 69,
            "temp_kf": -1.11,
        },
        "weather": [
            {"id": 500, "main": "Rain", "description": slot.description, "icon": "10d"}
        ],
        "clouds": {"all": 100},
        "wind": {"speed": slot.wind_speed, "deg": slot.wind_deg, "gust": 6.2},
        "visibility": 10000,
        "pop": slot.pop,
        "sys": {"pod": "d" if 6 <= slot.hour < 18 else "n"},
        "dt_txt": moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
    }


def forecast(city: City, slots: list[Slot]) -> dict[str, Any]:
    """Return `/data/2.5/forecast`'s body."""
    now = int(time.time())
    return {
        "cod": "200",
        "message": 0,
        "cnt": len(slots),
        "list": [forecast_entry(city, slot) for slot in slots],
        "city": {
            "id": city.id,
            "name": city.name,
            "coord": {"lat": city.lat, "lon": city.lon},
            "country": city.country,
            "population": 15000,
            "timezone": city.utc_offset,
            "sunrise": now - 20000,
            "sunset": now + 12000,
        },
    }


@dataclass
class OpenWeatherMap(StandIn):
    """OpenWeatherMap's current weather and 5-day/3-hour forecast."""

    key: str = OWM_KEY
    # `q` (lower case) -> city.
    cities: dict[str, City] = field(default_factory=dict)
    # The forecast's entries; the same for every city.
    slots: list[Slot] = field(default_factory=list)

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/data/2.5/weather", self.handle)
        app.router.add_get("/data/2.5/forecast", self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        query = await self.received(request)
        if query.get("appid") != self.key:
            return web.json_response(OWM_INVALID_KEY, status=401)
        city = self.cities.get(query.get("q", "").lower())
        if city is None:
            return web.json_response(OWM_NOT_FOUND, status=404)
        if request.path.endswith("/forecast"):
            return web.json_response(forecast(city, self.slots))
        return web.json_response(current_weather(city))


# --- SearXNG ----------------------------------------------------------------


def searxng_result(
    position: int, title: str, content: str, url: str, engine: str = "duckduckgo"
) -> dict[str, Any]:
    """Return one element of SearXNG's `results` in format=json."""
    scheme, rest = url.split("://", 1)
    host, _, path = rest.partition("/")
    return {
        "url": url,
        "title": title,
        "content": content,
        "publishedDate": None,
        "thumbnail": "",
        "engine": engine,
        "template": "default.html",
        "parsed_url": [scheme, host, f"/{path}", "", "", ""],
        "img_src": "",
        "priority": "",
        "engines": [engine, "brave"],
        "positions": [position, position + 1],
        "score": 4.0 / position,
        "category": "general",
    }


@dataclass
class SearXNG(StandIn):
    """A SearXNG instance's /search."""

    results: list[dict[str, Any]] = field(default_factory=list)
    json_enabled: bool = True

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/search", self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        query = await self.received(request)
        if query.get("format") != "json" or not self.json_enabled:
            return web.Response(
                status=403, text=SEARXNG_FORBIDDEN, content_type="text/html"
            )
        return web.json_response(
            {
                "query": query.get("q", ""),
                "number_of_results": 0,
                "results": self.results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )


# --- TomTom -----------------------------------------------------------------


def tomtom_poi(name: str, municipality: str, lat: float, lon: float) -> dict[str, Any]:
    """Return a Search API result for a point of interest."""
    return {
        "type": "POI",
        "id": "528009002806016",
        "score": 7.8,
        "info": "search:ta:528009002806016-NL",
        "poi": {
            "name": name,
            "categorySet": [{"id": 7383}],
            "categories": ["airport"],
            "classifications": [
                {
                    "code": "AIRPORT",
                    "names": [{"nameLocale": "en-US", "name": "airport"}],
                }
            ],
        },
        "address": {
            "municipality": municipality,
            "countrySubdivision": "Noord-Holland",
            "countryCode": "NL",
            "country": "Nederland",
            "countryCodeISO3": "NLD",
            "freeformAddress": f"Evert van de Beekstraat, 1118 CN {municipality}",
            "localName": municipality,
        },
        "position": {"lat": lat, "lon": lon},
        "viewport": {
            "topLeftPoint": {"lat": lat + 0.01, "lon": lon - 0.01},
            "btmRightPoint": {"lat": lat - 0.01, "lon": lon + 0.01},
        },
    }


def tomtom_geography(name: str, lat: float, lon: float) -> dict[str, Any]:
    """Return a Search API result for a town."""
    return {
        "type": "Geography",
        "id": "NL/GEO/p0/3581",
        "score": 9.1,
        "entityType": "Municipality",
        "address": {
            "municipality": name,
            "countrySubdivision": "Utrecht",
            "countryCode": "NL",
            "country": "Nederland",
            "countryCodeISO3": "NLD",
            "freeformAddress": name,
        },
        "position": {"lat": lat, "lon": lon},
        "viewport": {
            "topLeftPoint": {"lat": lat + 0.05, "lon": lon - 0.05},
            "btmRightPoint": {"lat": lat - 0.05, "lon": lon + 0.05},
        },
        "boundingBox": {
            "topLeftPoint": {"lat": lat + 0.05, "lon": lon - 0.05},
            "btmRightPoint": {"lat": lat - 0.05, "lon": lon + 0.05},
            "entryPoints": [],
        },
        "dataSources": {"geometry": {"id": "00004e4c-3100-3c00-0000-000059686b3a"}},
    }


@dataclass
class TomTom(StandIn):
    """TomTom's Search and Routing APIs."""

    key: str = TOMTOM_KEY
    # The products the key has; a request for another is not entitled.
    products: set[str] = field(default_factory=lambda: {"search", "routing"})
    # The query (lower case) -> search results.
    places: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    travel_seconds: int = 2290
    delay_seconds: int = 380
    length_meters: int = 41230
    no_route: bool = False
    # The zone of the times in route summaries (TomTom uses the origin's).
    zone: ZoneInfo = field(default_factory=lambda: ZoneInfo("Europe/Rome"))
    # The route summaries sent.
    summaries: list[dict[str, Any]] = field(default_factory=list)

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/search/2/search/{query}.json", self.handle_search)
        app.router.add_get(
            "/routing/1/calculateRoute/{locations}/json", self.handle_route
        )

    def refusal(self, query: dict[str, str], product: str) -> web.Response | None:
        """TomTom's 403 for an unknown key, or for a key without the product."""
        if query.get("key") != self.key:
            return web.Response(
                status=403, text=TOMTOM_UNKNOWN_KEY, content_type="text/xml"
            )
        if product not in self.products:
            return web.json_response(TOMTOM_NOT_ENTITLED, status=403)
        return None

    def paths(self, prefix: str) -> list[str]:
        """The paths of the requests received that start with `prefix`."""
        return [r["path"] for r in self.requests if r["path"].startswith(prefix)]

    async def handle_search(self, request: web.Request) -> web.Response:
        query = await self.received(request)
        if refused := self.refusal(query, "search"):
            return refused
        text = request.match_info["query"]
        results = self.places.get(text.lower(), [])[: int(query.get("limit", "10"))]
        return web.json_response(
            {
                "summary": {
                    "query": text.lower(),
                    "queryType": "NON_NEAR",
                    "queryTime": 21,
                    "numResults": len(results),
                    "offset": 0,
                    "totalResults": len(results),
                    "fuzzyLevel": 1,
                },
                "results": results,
            }
        )

    async def handle_route(self, request: web.Request) -> web.Response:
        query = await self.received(request)
        if refused := self.refusal(query, "routing"):
            return refused
        if self.no_route or ("arriveAt" in query and "departAt" in query):
            return web.json_response(TOMTOM_NO_ROUTE, status=400)
        travel = timedelta(seconds=self.travel_seconds)
        predicted = "arriveAt" in query or "departAt" in query
        if arrive_at := query.get("arriveAt"):
            arrival = datetime.fromisoformat(arrive_at).astimezone(self.zone)
            # TomTom plans to arrive a little before the time asked.
            arrival -= timedelta(seconds=47)
            departure = arrival - travel
        elif depart_at := query.get("departAt"):
            departure = datetime.fromisoformat(depart_at).astimezone(self.zone)
            arrival = departure + travel
        else:
            departure = datetime.now(self.zone).replace(microsecond=0)
            arrival = departure + travel
        summary = {
            "lengthInMeters": self.length_meters,
            "travelTimeInSeconds": self.travel_seconds,
            "trafficDelayInSeconds": 0 if predicted else self.delay_seconds,
            "trafficLengthInMeters": 0 if predicted else 3120,
            "departureTime": departure.isoformat(),
            "arrivalTime": arrival.isoformat(),
        }
        self.summaries.append(summary)
        points = [
            dict(
                zip(
                    ("latitude", "longitude"), map(float, point.split(",")), strict=True
                )
            )
            for point in request.match_info["locations"].split(":")
        ]
        return web.json_response(
            {
                "formatVersion": "0.0.12",
                "routes": [
                    {
                        "summary": summary,
                        "legs": [{"summary": summary, "points": points}],
                        "sections": [
                            {
                                "startPointIndex": 0,
                                "endPointIndex": len(points) - 1,
                                "sectionType": "TRAVEL_MODE",
                                "travelMode": "car",
                            }
                        ],
                    }
                ],
            }
        )
