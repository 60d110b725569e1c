"""calendar_add.py: a new event file in the vdir, which the calendar tool then lists."""

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import icalendar
import pytest

from tests.harness.calendar_tools import on_one_day

from .conftest import ZONE, ExampleFolder
from .test_calendar import calendar, vdir  # noqa: F401 (fixtures)

ROME = ZoneInfo(ZONE)
# Dates in the future whenever the tests run.
YEAR = datetime.now(ROME).year + 2


def last_sunday(year: int, month: int) -> date:
    """The day the clocks change in the European Union (March and October)."""
    day = date(year, month + 1, 1) - timedelta(days=1)
    return day - timedelta(days=(day.weekday() + 1) % 7)


SPRING_FORWARD = last_sunday(YEAR, 3)
FALL_BACK = last_sunday(YEAR, 10)


def added_files(root: Path, before: set[Path]) -> list[Path]:
    """Files in the vdir that were not there before, temporary ones included."""
    return sorted(set(root.rglob("*")) - before)


def snapshot(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def only_event(path: Path) -> tuple[icalendar.Calendar, icalendar.Event]:
    parsed = icalendar.Calendar.from_ical(path.read_bytes())
    (event,) = parsed.walk("VEVENT")
    return parsed, event


@pytest.fixture
def before(vdir: Path) -> set[Path]:  # noqa: F811
    return snapshot(vdir)


async def test_timed_event_in_the_first_calendar(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    day = date(YEAR, 6, 12)
    result = await calendar.run(
        "calendar_add",
        {"title": "Dentist", "start": f"{day} 10:30", "duration": 45},
    )

    assert result == f"added to Personal: {day} 10:30 Dentist (until 11:15)"
    (path,) = added_files(vdir, before)
    assert path.parent == vdir / "personal"
    parsed, event = only_event(path)
    assert path.name == f"{event['UID']}.ics"
    assert str(event["UID"]).endswith("@desktop-assistant")
    stamp = event.decoded("DTSTAMP")
    assert abs(datetime.now(UTC) - stamp) < timedelta(minutes=1)
    assert event["DTSTART"].params["TZID"] == ZONE
    assert event.decoded("DTSTART") == datetime(YEAR, 6, 12, 10, 30, tzinfo=ROME)
    assert event.decoded("DTEND") == datetime(YEAR, 6, 12, 11, 15, tzinfo=ROME)
    assert [tz.tz_name for tz in parsed.timezones] == [ZONE]
    assert str(event["SUMMARY"]) == "Dentist"
    # The calendar tool lists it among the others.
    assert await calendar.run("calendar", {"start": str(day)}) == (
        f"{day} 10:30 Dentist"
    )


async def test_all_day_event_in_a_named_calendar(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    day = date(YEAR, 10, 30)
    result = await calendar.run(
        "calendar_add",
        {"title": "Pay  the\nrent", "start": str(day), "calendar": "WORK"},
    )

    assert result == f"added to work: {day} all day Pay the rent"
    (path,) = added_files(vdir, before)
    assert path.parent == vdir / "work"
    _, event = only_event(path)
    assert event.decoded("DTSTART") == day
    assert event.decoded("DTEND") == day + timedelta(days=1)
    # The yearly birthday of the fixture shares the day.
    assert await calendar.run("calendar", {"start": str(day)}) == (
        f"{day} all day Marco's birthday\n{day} all day Pay the rent"
    )


async def test_calendar_named_by_its_display_name(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    day = date(YEAR, 7, 1)
    result = await calendar.run(
        "calendar_add",
        {
            "title": "Holiday",
            "start": str(day),
            "duration": 3 * 24 * 60,
            "calendar": "personal",
        },
    )
    assert (
        result
        == f"added to Personal: {day} all day Holiday (until {day + timedelta(days=2)})"
    )
    result = await calendar.run(
        "calendar_add",
        {"title": "Gym", "start": f"{day} 18:00", "calendar": "Personal"},
    )
    assert result == f"added to Personal: {day} 18:00 Gym (until 19:00)"
    assert {path.parent.name for path in added_files(vdir, before)} == {"personal"}
    assert await calendar.run("calendar", {"start": str(day), "days": 3}) == (
        f"{day} all day Holiday (until {day + timedelta(days=2)})\n{day} 18:00 Gym"
    )


async def test_unknown_calendar_is_refused(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    result = await calendar.run(
        "calendar_add",
        {"title": "Gym", "start": f"{YEAR}-07-01 18:00", "calendar": "family"},
    )
    assert result == (
        "error: no calendar is called 'family' (calendars: Personal, work)"
    )
    assert added_files(vdir, before) == []


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("2020-01-01", "error: 2020-01-01 is in the past"),
        ("2020-01-01 10:00", "error: 2020-01-01 10:00 is in the past"),
        (
            str(datetime.now(ROME).date() - timedelta(days=1)),
            f"error: {datetime.now(ROME).date() - timedelta(days=1)} is in the past",
        ),
        # Earlier today, in local time.
        (
            f"{(datetime.now(ROME) - timedelta(minutes=2)):%Y-%m-%d %H:%M}",
            f"error: {(datetime.now(ROME) - timedelta(minutes=2)):%Y-%m-%d %H:%M} "
            "is in the past",
        ),
        (
            f"{SPRING_FORWARD} 02:30",
            f"error: {SPRING_FORWARD} 02:30 does not exist in {ZONE}: "
            "the clocks skip that hour",
        ),
        (
            "next tuesday",
            "error: start must be like 2026-10-22 or 2026-10-22 "
            "14:30, got 'next tuesday'",
        ),
        ("", "error: start is empty: give a date like 2026-10-22"),
    ],
)
async def test_refused_starts_write_nothing(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
    start: str,
    expected: str,
) -> None:
    assert (
        await calendar.run("calendar_add", {"title": "X", "start": start}) == expected
    )
    assert added_files(vdir, before) == []


async def test_today_is_not_the_past_for_a_whole_day(
    calendar: ExampleFolder,  # noqa: F811
) -> None:

    async def add_today(today: date) -> tuple[str, str]:
        added = await calendar.run(
            "calendar_add", {"title": "Call mum", "start": str(today)}
        )
        return added, await calendar.run("calendar", {})

    today, (added, listed) = await on_one_day(ROME, add_today)
    assert added == f"added to Personal: {today} all day Call mum"
    assert "Call mum" in listed


async def test_summer_time_starts(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    """Two hours across the night the clocks go forward last three on the wall."""
    result = await calendar.run(
        "calendar_add",
        {"title": "Night train", "start": f"{SPRING_FORWARD} 01:00", "duration": 120},
    )
    assert (
        result == f"added to Personal: {SPRING_FORWARD} 01:00 Night train (until 04:00)"
    )
    (path,) = added_files(vdir, before)
    _, event = only_event(path)
    start, end = event.decoded("DTSTART"), event.decoded("DTEND")
    assert start.utcoffset() == timedelta(hours=1)
    assert end.utcoffset() == timedelta(hours=2)
    # Same-zone subtraction in Python counts wall-clock time: compare in UTC.
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=2)
    assert event["DTEND"].params["TZID"] == ZONE


async def test_summer_time_ends(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    """An end in the hour that happens twice is written in UTC, so it is exact."""
    result = await calendar.run(
        "calendar_add",
        {"title": "Night shift", "start": f"{FALL_BACK} 01:30", "duration": 120},
    )
    assert result == f"added to Personal: {FALL_BACK} 01:30 Night shift (until 02:30)"
    (path,) = added_files(vdir, before)
    _, event = only_event(path)
    start, end = event.decoded("DTSTART"), event.decoded("DTEND")
    assert event["DTSTART"].params["TZID"] == ZONE
    assert start.utcoffset() == timedelta(hours=2)
    assert end == datetime(FALL_BACK.year, 10, FALL_BACK.day, 1, 30, tzinfo=UTC)
    # Same-zone subtraction in Python counts wall-clock time: compare in UTC.
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=2)
    assert await calendar.run("calendar", {"start": str(FALL_BACK)}) == (
        f"{FALL_BACK} 01:30 Night shift"
    )
    # A day after the change: winter time.
    day = FALL_BACK + timedelta(days=1)
    await calendar.run("calendar_add", {"title": "Gym", "start": f"{day} 10:00"})
    listed = await calendar.run("calendar", {"start": str(day)})
    assert f"{day} 10:00 Gym" in listed.splitlines()


async def test_start_with_an_offset_is_kept_as_that_instant(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    day = date(YEAR, 1, 15)
    result = await calendar.run(
        "calendar_add", {"title": "Call with New York", "start": f"{day}T09:00-05:00"}
    )
    # 14:00 UTC is 15:00 in Rome in winter.
    assert result == f"added to Personal: {day} 15:00 Call with New York (until 16:00)"
    (path,) = added_files(vdir, before)
    _, event = only_event(path)
    assert event.decoded("DTSTART") == datetime(YEAR, 1, 15, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"title": " ", "start": f"{YEAR}-01-01"},
            "error: title is empty: say what the event is",
        ),
        (
            {"title": "X", "start": f"{YEAR}-01-01", "duration": 0},
            "error: duration must be a whole number of minutes from 1 to 527040",
        ),
    ],
)
async def test_bad_arguments(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
    arguments: dict[str, object],
    expected: str,
) -> None:
    assert await calendar.run("calendar_add", arguments) == expected
    assert added_files(vdir, before) == []


async def test_missing_folder(example_folder: ExampleFolder, tmp_path: Path) -> None:
    example_folder.env["CALENDAR_DIR"] = str(tmp_path / "nowhere")
    result = await example_folder.run(
        "calendar_add", {"title": "X", "start": f"{YEAR}-01-01"}
    )
    assert result == (
        "error: the calendar folder does not exist: set CALENDAR_DIR in [env] "
        "to the vdir (one folder per calendar, .ics files)"
    )


async def test_a_time_zone_rule_without_a_name_is_refused(
    calendar: ExampleFolder,  # noqa: F811
    vdir: Path,  # noqa: F811
    before: set[Path],
) -> None:
    # POSIX TZ rules name no IANA zone an event's TZID could carry: guessing
    # UTC would file 14:30 Rome time as 14:30 UTC.
    calendar.env["TZ"] = "CET-1CEST,M3.5.0,M10.5.0/3"
    result = await calendar.run(
        "calendar_add", {"title": "Dentist", "start": f"{YEAR}-06-12 14:30"}
    )
    assert result == (
        "error: the local time zone has no name an event can carry:"
        " set TZ to one, such as TZ=Europe/Rome"
    )
    assert added_files(vdir, before) == []
