"""travel.py against a TomTom stand-in: live traffic, arrive-by, places, faults."""

from datetime import date, datetime, timedelta
import importlib.util
import json
from pathlib import Path
import stat
import time
from zoneinfo import ZoneInfo

import pytest

from tests.harness.ports import closed_port_url
from tests.harness.web_stand_ins import TOMTOM_KEY, TomTom, tomtom_geography, tomtom_poi

from .conftest import EXAMPLES, ZONE, ExampleFolder

SCHIPHOL = tomtom_poi("Amsterdam Airport Schiphol", "Haarlemmermeer", 52.30907, 4.76278)
UTRECHT = tomtom_geography("Utrecht", 52.09083, 5.12222)
TRIP = "From Utrecht to Amsterdam Airport Schiphol (Haarlemmermeer)"


def today() -> date:
    return datetime.now(ZoneInfo(ZONE)).date()


def said(moment: str, day: date) -> str:
    """How the answer gives a time: with its day when that is not `day`."""
    parsed = datetime.fromisoformat(moment)
    if parsed.date() == day:
        return f"{parsed:%H:%M}"
    return f"{parsed:%H:%M} on {parsed:%A} {parsed.date()}"


@pytest.fixture
def travel(example_folder: ExampleFolder, tomtom: TomTom) -> ExampleFolder:
    example_folder.env |= {
        "TOMTOM_API_KEY": TOMTOM_KEY,
        "TOMTOM_URL": tomtom.url,
        "TRAVEL_HOME": "Utrecht",
    }
    example_folder.shown.add("TRAVEL_HOME")
    tomtom.places = {"schiphol": [SCHIPHOL], "utrecht": [UTRECHT]}
    return example_folder


async def test_drive_now_on_live_traffic(travel: ExampleFolder, tomtom: TomTom) -> None:
    result = await travel.run(
        "travel", {"origin": "Utrecht", "destination": "Schiphol"}
    )

    (summary,) = tomtom.summaries
    assert result == (
        f"{TRIP}: 38 min by car with current traffic including 6 min of traffic "
        f"delay, 41 km. Leaving now, at {said(summary['departureTime'], today())}, "
        f"you arrive at {said(summary['arrivalTime'], today())}."
    )
    origin, destination, route = tomtom.requests
    assert origin == {
        "path": "/search/2/search/Utrecht.json",
        "key": TOMTOM_KEY,
        "limit": "1",
    }
    # The destination is looked for near the origin.
    assert destination == {
        "path": "/search/2/search/Schiphol.json",
        "key": TOMTOM_KEY,
        "limit": "1",
        "lat": "52.090830",
        "lon": "5.122220",
    }
    assert route == {
        "path": "/routing/1/calculateRoute/52.090830,5.122220:52.309070,4.762780/json",
        "key": TOMTOM_KEY,
        "traffic": "true",
        "travelMode": "car",
    }


async def test_latest_departure_to_arrive_in_time(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    tomorrow = today() + timedelta(days=1)
    nine = datetime(
        tomorrow.year, tomorrow.month, tomorrow.day, 9, tzinfo=ZoneInfo(ZONE)
    )

    result = await travel.run(
        "travel", {"destination": "Schiphol", "arrive_at": f"{tomorrow} 09:00"}
    )

    # The stand-in plans to arrive 47 s early: 09:00 - 47 s - 38 min 10 s.
    assert result == (
        f"{TRIP}, to arrive by 09:00 on {tomorrow:%A} {tomorrow}: leave by 08:21, "
        "arriving at 08:59. The drive takes 38 min with predicted traffic, 41 km."
    )
    assert tomtom.requests[-1]["arriveAt"] == nine.isoformat()
    # With no origin given, TRAVEL_HOME is where the drive starts.
    assert tomtom.requests[0]["path"] == "/search/2/search/Utrecht.json"


async def test_coordinates_need_no_lookup(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    result = await travel.run(
        "travel", {"origin": "52.0907, 5.1214", "destination": "Schiphol"}
    )

    assert result.startswith("From 52.0907,5.1214 to Amsterdam Airport Schiphol")
    assert [request["path"] for request in tomtom.requests] == [
        "/search/2/search/Schiphol.json",
        "/routing/1/calculateRoute/52.090700,5.121400:52.309070,4.762780/json",
    ]


@pytest.mark.parametrize(
    ("arrive_at", "expected"),
    [
        # Midnight of today has always passed.
        (
            "00:00",
            "error: 00:00 is in the past: give a later time (with a date for another day)",
        ),
        (
            "2020-05-04 09:00",
            "error: 2020-05-04 09:00 is in the past: give a later time (with a date for another day)",
        ),
        (
            "half past nine",
            "error: arrive_at must be a time like 09:00 or 2026-10-22 09:00, got 'half past nine'",
        ),
    ],
)
async def test_arrival_in_the_past_is_refused(
    travel: ExampleFolder, tomtom: TomTom, arrive_at: str, expected: str
) -> None:
    assert (
        await travel.run("travel", {"destination": "Schiphol", "arrive_at": arrive_at})
        == expected
    )
    assert tomtom.requests == []


async def test_unknown_place(travel: ExampleFolder) -> None:
    assert await travel.run("travel", {"destination": "Atlantis"}) == (
        "error: TomTom found no place called 'Atlantis'"
    )


async def test_no_route(travel: ExampleFolder, tomtom: TomTom) -> None:
    tomtom.no_route = True

    assert await travel.run("travel", {"destination": "Schiphol"}) == (
        "error: TomTom found no route: "
        "Engine error while executing route request: NO_ROUTE_FOUND"
    )


async def test_refused_key_is_not_repeated(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    tomtom.key = "another-key"
    result = await travel.run("travel", {"destination": "Schiphol"})

    assert result == "error: TomTom refused the API key: Developer Inactive"
    assert TOMTOM_KEY not in result


async def test_slow_service(travel: ExampleFolder, tomtom: TomTom) -> None:
    # Far past the deadline: only the deadline can end the wait this soon.
    tomtom.delay = 60
    travel.env["TOOL_WEB_TIMEOUT"] = "0.5"

    assert await travel.run("travel", {"destination": "Schiphol"}) == (
        "error: TomTom did not answer within 0.5 s"
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (None, "error: cannot reach TomTom: Connection refused"),
        ("api.tomtom.com", "error: the TomTom URL must start with http:// or https://"),
    ],
)
async def test_unreachable_service(
    travel: ExampleFolder, url: str | None, expected: str
) -> None:
    travel.env["TOMTOM_URL"] = url or closed_port_url()
    result = await travel.run("travel", {"destination": "Schiphol"})

    assert result == expected
    assert TOMTOM_KEY not in result


async def test_missing_settings(example_folder: ExampleFolder) -> None:
    assert await example_folder.run("travel", {"destination": "Schiphol"}) == (
        "error: TOMTOM_API_KEY is not set: add it to [env] in config.toml"
    )
    example_folder.env["TOMTOM_API_KEY"] = TOMTOM_KEY
    assert await example_folder.run("travel", {"destination": "Schiphol"}) == (
        "error: no origin: say where from, or set TRAVEL_HOME in [env]"
    )
    assert await example_folder.run("travel", {"origin": "Utrecht"}) == (
        "error: no destination: say where to"
    )


def test_redact_hides_every_form_of_a_secret() -> None:
    spec = importlib.util.spec_from_file_location(
        "helperlib", EXAMPLES / "helperlib.py"
    )
    assert spec is not None
    assert spec.loader is not None
    helperlib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helperlib)

    helperlib.keep_secret(TOMTOM_KEY)
    text = f"raw {TOMTOM_KEY}, quoted tt-key%2B4c8a%2F9e1f%3D%3D, form tt-key%2B4c8a%2F9e1f%3D%3D"
    assert helperlib.redact(text) == "raw ***, quoted ***, form ***"


def at(day: date, hour: int, minute: int = 0, zone: str = ZONE) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=ZoneInfo(zone))


async def test_leaving_at_a_time_on_predicted_traffic(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    tomorrow = today() + timedelta(days=1)

    result = await travel.run(
        "travel", {"destination": "Schiphol", "depart_at": f"{tomorrow} 08:00"}
    )

    # 08:00 + 38 min 10 s; predicted traffic has no live delay.
    assert result == (
        f"{TRIP}, leaving at 08:00 on {tomorrow:%A} {tomorrow}: you arrive at "
        "08:38. The drive takes 38 min with predicted traffic, 41 km."
    )
    route = tomtom.requests[-1]
    assert route["departAt"] == at(tomorrow, 8).isoformat()
    assert "arriveAt" not in route


@pytest.mark.parametrize("zone", ["Europe/Rome", "America/New_York"])
async def test_a_time_without_offset_is_read_in_the_tools_zone(
    travel: ExampleFolder, tomtom: TomTom, zone: str
) -> None:
    """TZ (Home Assistant's zone, as config.toml sets it) decides the offset."""
    travel.env["TZ"] = zone
    tomorrow = datetime.now(ZoneInfo(zone)).date() + timedelta(days=1)

    result = await travel.run(
        "travel", {"destination": "Schiphol", "depart_at": f"{tomorrow} 08:00"}
    )

    assert tomtom.requests[-1]["departAt"] == at(tomorrow, 8, zone=zone).isoformat()
    # The arrival is said in that zone too, whatever zone TomTom answers in.
    assert "leaving at 08:00" in result
    assert "you arrive at 08:38" in result


async def test_departing_now_is_live_traffic(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    result = await travel.run("travel", {"destination": "Schiphol", "depart_at": "Now"})

    assert "with current traffic" in result
    assert "departAt" not in tomtom.requests[-1]


async def test_a_time_with_an_offset_keeps_it(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    tomorrow = today() + timedelta(days=1)
    await travel.run(
        "travel", {"destination": "Schiphol", "depart_at": f"{tomorrow}T08:00+00:00"}
    )
    assert tomtom.requests[-1]["departAt"] == f"{tomorrow}T08:00:00+00:00"


@pytest.mark.parametrize(
    ("name", "words"), [("depart_at", "leaving at"), ("arrive_at", "to arrive by")]
)
async def test_a_time_with_another_offset_is_said_in_local_time(
    travel: ExampleFolder, tomtom: TomTom, name: str, words: str
) -> None:
    """Both times of the answer are in one zone, the local one, and it says so."""
    tomorrow = today() + timedelta(days=1)
    asked = at(tomorrow, 8, zone="UTC")
    local = asked.astimezone(ZoneInfo(ZONE))

    result = await travel.run(
        "travel", {"destination": "Schiphol", name: asked.isoformat()}
    )

    (summary,) = tomtom.summaries
    departure, arrival = summary["departureTime"], summary["arrivalTime"]
    spoken = said(local.isoformat(), today())
    assert result.startswith(
        f"{TRIP}, leaving at {spoken} local time: you arrive at "
        f"{said(arrival, local.date())}."
        if name == "depart_at"
        else f"{TRIP}, to arrive by {spoken} local time: leave by "
        f"{said(departure, local.date())}, arriving at {said(arrival, local.date())}."
    )
    assert f"{words} {asked:%H:%M}" not in result


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"arrive_at": "23:59", "depart_at": "23:58"},
            "error: give arrive_at or depart_at, not both: arrive_at is the latest "
            "arrival, depart_at the departure",
        ),
        (
            {"depart_at": "00:00"},
            "error: 00:00 is in the past: give a later time (with a date for another day)",
        ),
        (
            {"depart_at": "2020-05-04 09:00"},
            "error: 2020-05-04 09:00 is in the past: give a later time (with a date "
            "for another day)",
        ),
        (
            {"depart_at": "at eight"},
            "error: depart_at must be a time like 09:00 or 2026-10-22 09:00, got "
            "'at eight'",
        ),
    ],
)
async def test_departure_refused_before_any_request(
    travel: ExampleFolder,
    tomtom: TomTom,
    arguments: dict[str, str],
    expected: str,
) -> None:
    result = await travel.run("travel", {"destination": "Schiphol", **arguments})

    assert result == expected
    assert tomtom.requests == []
    # The next question is answered.
    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)


def cache_file(travel: ExampleFolder) -> Path:
    return (
        Path(travel.env["XDG_CACHE_HOME"]) / "desktop_assistant" / "travel-places.json"
    )


def age_cache(travel: ExampleFolder, seconds: float) -> None:
    """Make every cached lookup `seconds` older, as if that much time passed."""
    path = cache_file(travel)
    entries = json.loads(path.read_text())
    for entry in entries.values():
        entry["at"] -= seconds
    path.write_text(json.dumps(entries))


async def test_place_lookups_are_cached_for_a_day_routes_never(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    first = await travel.run("travel", {"destination": "Schiphol"})
    second = await travel.run("travel", {"destination": "  schiphol "})

    assert first.startswith(TRIP)
    assert second.startswith(TRIP)
    # Two lookups (Utrecht, Schiphol near it) once; a route for each question.
    assert len(tomtom.paths("/search/")) == 2
    assert len(tomtom.paths("/routing/")) == 2
    cached = json.loads(cache_file(travel).read_text())
    assert TOMTOM_KEY not in json.dumps(cached)
    assert {entry["place"]["name"] for entry in cached.values()} == {
        "Utrecht",
        "Amsterdam Airport Schiphol (Haarlemmermeer)",
    }

    age_cache(travel, 23 * 3600)
    await travel.run("travel", {"destination": "Schiphol"})
    assert len(tomtom.paths("/search/")) == 2
    age_cache(travel, 3600)
    await travel.run("travel", {"destination": "Schiphol"})
    assert len(tomtom.paths("/search/")) == 4
    assert len(tomtom.paths("/routing/")) == 4


async def test_a_place_not_found_is_cached_for_ten_minutes(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    missing = "error: TomTom found no place called 'Atlantis'"
    assert await travel.run("travel", {"destination": "Atlantis"}) == missing
    assert await travel.run("travel", {"destination": "Atlantis"}) == missing
    assert tomtom.paths("/search/2/search/Atlantis") == [
        "/search/2/search/Atlantis.json"
    ]

    # Found meanwhile: after ten minutes it is looked up again.
    tomtom.places["atlantis"] = [SCHIPHOL]
    age_cache(travel, 9 * 60)
    assert await travel.run("travel", {"destination": "Atlantis"}) == missing
    age_cache(travel, 60)
    assert (await travel.run("travel", {"destination": "Atlantis"})).startswith(TRIP)
    assert len(tomtom.paths("/search/2/search/Atlantis")) == 2


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"x": {"at": "soon"}}'])
async def test_a_broken_cache_file_costs_only_a_lookup(
    travel: ExampleFolder, tomtom: TomTom, content: str
) -> None:
    path = cache_file(travel)
    path.parent.mkdir(parents=True)
    path.write_text(content)

    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)
    assert len(tomtom.paths("/search/")) == 2
    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)
    assert len(tomtom.paths("/search/")) == 2


async def test_a_cache_that_cannot_be_written_is_no_fault(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    # Where the cache folder should be is a file.
    cache_file(travel).parents[1].write_text("not a folder")

    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)
    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)
    assert len(tomtom.paths("/search/")) == 4


@pytest.mark.parametrize(
    ("missing", "product", "requests"),
    [("search", "Search API", 1), ("routing", "Routing API", 3)],
)
async def test_a_missing_entitlement_is_not_a_wrong_key(
    travel: ExampleFolder,
    tomtom: TomTom,
    missing: str,
    product: str,
    requests: int,
) -> None:
    tomtom.products.discard(missing)

    result = await travel.run("travel", {"destination": "Schiphol"})

    assert result == (
        f"error: the TomTom key is not enabled for the {product} (TomTom: You are "
        "not allowed to access this endpoint). The key is known, its product is "
        f"missing: add the {product} to it in TomTom's developer dashboard"
    )
    assert "refused the API key" not in result
    assert TOMTOM_KEY not in result
    assert len(tomtom.requests) == requests


async def test_a_cache_entry_of_another_shape_is_looked_up_again(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    # A time as text, as a hand or another program may write it, for the very
    # place asked about and for another one.
    written = str(time.time())
    utrecht = {"name": "Utrecht", "lat": 52.09083, "lon": 5.12222}
    path = cache_file(travel)
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                f"{tomtom.url} | utrecht | ": {"at": written, "place": utrecht},
                f"{tomtom.url} | rome | ": {"at": written, "place": utrecht},
            }
        )
    )

    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)
    assert len(tomtom.paths("/search/")) == 2
    # Replaced by entries of the right shape, which the next question uses.
    cached = json.loads(path.read_text())
    assert len(cached) == 2
    assert all(isinstance(entry["at"], float) for entry in cached.values())
    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)
    assert len(tomtom.paths("/search/")) == 2


async def test_the_place_cache_is_readable_by_its_owner_alone(
    travel: ExampleFolder, tomtom: TomTom
) -> None:
    await travel.run("travel", {"destination": "Schiphol"})
    path = cache_file(travel)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    # One left readable by everyone (by an earlier version) is mended when read.
    path.chmod(0o644)
    assert (await travel.run("travel", {"destination": "Schiphol"})).startswith(TRIP)
    assert len(tomtom.paths("/search/")) == 2
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
