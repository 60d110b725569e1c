"""calendar.py against a vdir with every kind of event it must get right."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
import hashlib
import os
from pathlib import Path
import subprocess
import textwrap
import threading
from zoneinfo import ZoneInfo

import pytest

from tests.harness.calendar_tools import on_one_day

from .conftest import EXAMPLES, ZONE, ExampleFolder

ROME_VTIMEZONE = """
    BEGIN:VTIMEZONE
    TZID:Europe/Rome
    BEGIN:DAYLIGHT
    TZOFFSETFROM:+0100
    TZOFFSETTO:+0200
    TZNAME:CEST
    DTSTART:19700329T020000
    RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
    END:DAYLIGHT
    BEGIN:STANDARD
    TZOFFSETFROM:+0200
    TZOFFSETTO:+0100
    TZNAME:CET
    DTSTART:19701025T030000
    RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
    END:STANDARD
    END:VTIMEZONE
"""
# As Outlook writes it: a Windows zone name, defined only by its rules.
OUTLOOK_VTIMEZONE = """
    BEGIN:VTIMEZONE
    TZID:W. Europe Standard Time
    BEGIN:STANDARD
    DTSTART:16010101T030000
    TZOFFSETFROM:+0200
    TZOFFSETTO:+0100
    RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10
    END:STANDARD
    BEGIN:DAYLIGHT
    DTSTART:16010101T020000
    TZOFFSETFROM:+0100
    TZOFFSETTO:+0200
    RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3
    END:DAYLIGHT
    END:VTIMEZONE
"""

# File name in the vdir -> the components of its VCALENDAR. The range asked
# for below is 2026-10-22 to 2026-11-05: Europe/Rome leaves summer time on
# 25 October, New York on 1 November.
VDIR = {
    # A one-off with a TZID, next to a VTIMEZONE whose RRULEs are no events.
    "personal/dentist.ics": ROME_VTIMEZONE
    + """
        BEGIN:VEVENT
        UID:dentist-1
        DTSTAMP:20260901T120000Z
        DTSTART;TZID=Europe/Rome:20261023T103000
        DTEND;TZID=Europe/Rome:20261023T110000
        SUMMARY:Dentist
        END:VEVENT
    """,
    # Yearly, all day.
    "personal/birthday.ics": """
        BEGIN:VEVENT
        UID:birthday-marco
        DTSTAMP:20260901T120000Z
        DTSTART;VALUE=DATE:19851030
        DTEND;VALUE=DATE:19851031
        RRULE:FREQ=YEARLY
        SUMMARY:Marco's birthday
        END:VEVENT
    """,
    # All day over four days, begun before the range.
    "personal/break.ics": """
        BEGIN:VEVENT
        UID:autumn-break
        DTSTAMP:20260901T120000Z
        DTSTART;VALUE=DATE:20261020
        DTEND;VALUE=DATE:20261024
        SUMMARY:Autumn break
        END:VEVENT
    """,
    # All day without DTEND: that day only.
    "personal/recycling.ics": """
        BEGIN:VEVENT
        UID:recycling
        DTSTAMP:20260901T120000Z
        DTSTART;VALUE=DATE:20261104
        SUMMARY:Recycling day
        END:VEVENT
    """,
    # Floating: the same wall time wherever you are.
    "personal/gym.ics": """
        BEGIN:VEVENT
        UID:gym
        DTSTAMP:20260901T120000Z
        DTSTART:20261028T183000
        DTEND:20261028T193000
        SUMMARY:Gym
        END:VEVENT
    """,
    # Over midnight.
    "personal/party.ics": ROME_VTIMEZONE
    + """
        BEGIN:VEVENT
        UID:party
        DTSTAMP:20260901T120000Z
        DTSTART;TZID=Europe/Rome:20261031T210000
        DTEND;TZID=Europe/Rome:20261101T020000
        SUMMARY:Halloween party
        END:VEVENT
    """,
    # Outside the range.
    "personal/later.ics": """
        BEGIN:VEVENT
        UID:later
        DTSTAMP:20260901T120000Z
        DTSTART:20261210T190000Z
        SUMMARY:Concert
        END:VEVENT
    """,
    # UTC, weekly for two weeks (COUNT); 08:00Z is 10:00, then 09:00 in Rome.
    "work/maintenance.ics": """
        BEGIN:VEVENT
        UID:maintenance
        DTSTAMP:20260901T120000Z
        DTSTART:20261022T080000Z
        DTEND:20261022T090000Z
        RRULE:FREQ=WEEKLY;COUNT=2
        SUMMARY:Server maintenance
        END:VEVENT
    """,
    # In New York time: 15:00 in Rome, 14:00 between the two DST changes.
    "work/new-york.ics": """
        BEGIN:VEVENT
        UID:new-york
        DTSTAMP:20260901T120000Z
        DTSTART;TZID=America/New_York:20261022T090000
        DTEND;TZID=America/New_York:20261022T100000
        RRULE:FREQ=WEEKLY;COUNT=3
        SUMMARY:Call with New York
        END:VEVENT
    """,
    # Mondays and Thursdays until 2 November (UNTIL, inclusive), one date
    # excluded (EXDATE), one occurrence moved and one cancelled (RECURRENCE-ID).
    "work/standup.ics": ROME_VTIMEZONE
    + """
        BEGIN:VEVENT
        UID:standup
        DTSTAMP:20260901T120000Z
        DTSTART;TZID=Europe/Rome:20261005T093000
        DTEND;TZID=Europe/Rome:20261005T094500
        RRULE:FREQ=WEEKLY;BYDAY=MO,TH;UNTIL=20261102T083000Z
        EXDATE;TZID=Europe/Rome:20261022T093000
        SUMMARY:Standup
        END:VEVENT
        BEGIN:VEVENT
        UID:standup
        DTSTAMP:20260901T120000Z
        RECURRENCE-ID;TZID=Europe/Rome:20261026T093000
        DTSTART;TZID=Europe/Rome:20261027T110000
        DTEND;TZID=Europe/Rome:20261027T111500
        SUMMARY:Standup (moved)
        END:VEVENT
        BEGIN:VEVENT
        UID:standup
        DTSTAMP:20260901T120000Z
        RECURRENCE-ID;TZID=Europe/Rome:20261029T093000
        DTSTART;TZID=Europe/Rome:20261029T093000
        DTEND;TZID=Europe/Rome:20261029T094500
        STATUS:CANCELLED
        SUMMARY:Standup
        END:VEVENT
    """,
    "work/lunch.ics": OUTLOOK_VTIMEZONE
    + """
        BEGIN:VEVENT
        UID:lunch
        DTSTAMP:20260901T120000Z
        DTSTART;TZID=W. Europe Standard Time:20261103T123000
        DTEND;TZID=W. Europe Standard Time:20261103T133000
        SUMMARY:Team lunch
        END:VEVENT
    """,
}
FORTNIGHT = """\
2026-10-20 all day Autumn break (until 2026-10-23)
2026-10-22 10:00 Server maintenance
2026-10-22 15:00 Call with New York
2026-10-23 10:30 Dentist
2026-10-27 11:00 Standup (moved)
2026-10-28 18:30 Gym
2026-10-29 09:00 Server maintenance
2026-10-29 14:00 Call with New York
2026-10-30 all day Marco's birthday
2026-10-31 21:00 Halloween party (until 2026-11-01 02:00)
2026-11-02 09:30 Standup
2026-11-03 12:30 Team lunch
2026-11-04 all day Recycling day
2026-11-05 15:00 Call with New York"""


def write_ics(path: Path, components: str) -> None:
    """Write one VCALENDAR with CRLF line ends, as vdirsyncer does."""
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//vdir//EN"]
    lines += textwrap.dedent(components).strip().splitlines()
    lines.append("END:VCALENDAR")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\r\n".join(line.strip() for line in lines) + "\r\n").encode())


@pytest.fixture
def vdir(tmp_path: Path) -> Path:
    """The vdir: two calendars, with vdirsyncer's metadata files and a broken file."""
    root = tmp_path / "calendars"
    for name, components in VDIR.items():
        write_ics(root / name, components)
    (root / "personal" / "displayname").write_text("Personal")
    (root / "work" / "color").write_text("#ff0000")
    (root / "work" / "broken.ics").write_text(
        "BEGIN:VCALENDAR\r\nthis is not iCalendar\r\n"
    )
    return root


@pytest.fixture
def calendar(example_folder: ExampleFolder, vdir: Path) -> ExampleFolder:
    example_folder.env["CALENDAR_DIR"] = str(vdir)
    return example_folder


async def test_every_kind_of_event_over_two_weeks(calendar: ExampleFolder) -> None:
    assert (
        await calendar.run("calendar", {"start": "2026-10-22", "days": 15}) == FORTNIGHT
    )


@pytest.mark.parametrize(
    ("start", "days", "expected"),
    [
        # Only the part after midnight of the party is on this day.
        ("2026-11-01", 1, "2026-10-31 21:00 Halloween party (until 2026-11-01 02:00)"),
        ("2026-10-25", 1, "no events"),
        # The Thursday the EXDATE removes, inside the break.
        (
            "2026-10-22",
            1,
            "2026-10-20 all day Autumn break (until 2026-10-23)\n"
            "2026-10-22 10:00 Server maintenance\n"
            "2026-10-22 15:00 Call with New York",
        ),
        # The occurrence the override moved away, and its new day.
        ("2026-10-26", 2, "2026-10-27 11:00 Standup (moved)"),
        # COUNT ends the maintenance, UNTIL the standups.
        ("2026-11-05", 7, "2026-11-05 15:00 Call with New York"),
        # The birthday comes back every year.
        ("2030-10-30", "", "2030-10-30 all day Marco's birthday"),
    ],
)
async def test_single_days(
    calendar: ExampleFolder, start: str, days: int | str, expected: str
) -> None:
    assert await calendar.run("calendar", {"start": start, "days": days}) == expected


async def test_empty_start_is_today(
    example_folder: ExampleFolder, tmp_path: Path
) -> None:
    example_folder.env["CALENDAR_DIR"] = str(tmp_path / "today")

    async def list_today(today: date) -> str:
        write_ics(
            tmp_path / "today" / "home" / "plumber.ics",
            f"""
            BEGIN:VEVENT
            UID:plumber
            DTSTAMP:20260901T120000Z
            DTSTART;VALUE=DATE:{today:%Y%m%d}
            SUMMARY:Plumber comes
            END:VEVENT
            """,
        )
        return await example_folder.run("calendar")

    today, listed = await on_one_day(ZoneInfo(ZONE), list_today)
    assert listed == f"{today} all day Plumber comes"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"start": "next friday"},
            "error: start must be a date like 2026-10-22, got 'next friday'",
        ),
        ({"days": 0}, "error: days must be a whole number from 1 to 366, got '0'"),
        ({"days": 400}, "error: days must be a whole number from 1 to 366, got '400'"),
    ],
)
async def test_bad_arguments(
    calendar: ExampleFolder, arguments: dict[str, object], expected: str
) -> None:
    assert await calendar.run("calendar", arguments) == expected


async def test_missing_folder_is_named_by_its_setting(
    example_folder: ExampleFolder, tmp_path: Path
) -> None:
    secret_path = str(tmp_path / "nowhere" / "private-calendars")
    example_folder.env["CALENDAR_DIR"] = secret_path
    result = await example_folder.run("calendar")

    assert result == (
        "error: the calendar folder does not exist: set CALENDAR_DIR in [env] "
        "to the vdir (one folder per calendar, .ics files)"
    )
    assert "private-calendars" not in result


SECONDLY = """
    BEGIN:VEVENT
    UID:every-second-{index}
    DTSTAMP:20260901T120000Z
    DTSTART:20200101T000000Z
    RRULE:FREQ=SECONDLY
    SUMMARY:Tick
    END:VEVENT
"""
MINUTELY_ALL_YEAR = """
    BEGIN:VEVENT
    UID:every-minute
    DTSTAMP:20260901T120000Z
    DTSTART:20260101T000000Z
    RRULE:FREQ=MINUTELY;UNTIL=20270101T000000Z
    SUMMARY:Tock
    END:VEVENT
"""
# Cheap to expand (it starts on the day) but 600 lines long.
MINUTELY_TODAY = """
    BEGIN:VEVENT
    UID:pings
    DTSTAMP:20260901T120000Z
    DTSTART;TZID=Europe/Rome:20261104T100000
    RRULE:FREQ=MINUTELY;COUNT=600
    SUMMARY:Ping
    END:VEVENT
"""


def hash_until(stop: threading.Event) -> None:
    """Keep a core busy: hashlib releases the GIL on large buffers."""
    buffer = bytes(8 << 20)
    while not stop.is_set():
        hashlib.sha256(buffer).digest()


@contextmanager
def cpu_load(threads: int = 2) -> Iterator[None]:
    """Run CPU-bound threads beside the block, as a busy machine would."""
    stop = threading.Event()
    workers = [
        threading.Thread(target=hash_until, args=(stop,)) for _ in range(threads)
    ]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join()


@pytest.mark.parametrize("secondly_files", [1, 6])
async def test_hostile_files_cost_bounded_time_and_hide_nothing(
    calendar: ExampleFolder, vdir: Path, secondly_files: int
) -> None:
    for index in range(secondly_files):
        write_ics(
            vdir / "aaa-hostile" / f"seconds-{index}.ics",
            SECONDLY.format(index=index),
        )
    write_ics(vdir / "aaa-hostile" / "minutes.ics", MINUTELY_ALL_YEAR)
    write_ics(vdir / "aaa-hostile" / "pings.ics", MINUTELY_TODAY)
    asked = {"start": "2026-10-22", "days": 15}
    quiet = await calendar.run("calendar", asked)
    with cpu_load():
        loaded = await calendar.run("calendar", asked)

    # Every event of the other files and the 600 pings as one line; Tick
    # and Tock would step through more than 50,000 occurrences each (Tock
    # 444,901 from 1 January), so they are skipped, however fast the machine.
    # Within the tool's 15 s timeout, or the answer would be an error.
    expected = sorted(
        [
            *FORTNIGHT.splitlines(),
            "2026-11-04 10:00 Ping (and 599 more until 2026-11-04 19:59)",
        ],
        key=lambda line: line[:10],
    )
    assert quiet.splitlines() == expected
    assert loaded == quiet
    # The next question works.
    assert await calendar.run("calendar", {"start": "2026-11-03", "days": 1}) == (
        "2026-11-03 12:30 Team lunch"
    )


def test_skipped_hostile_events_are_named_on_stderr(vdir: Path) -> None:
    write_ics(vdir / "hostile" / "seconds.ics", SECONDLY.format(index=0))
    write_ics(
        vdir / "hostile" / "minutes.ics",
        MINUTELY_ALL_YEAR + MINUTELY_TODAY.replace("COUNT=600", "COUNT=100"),
    )
    done = run_helper("2026-11-03", "2", env={"CALENDAR_DIR": str(vdir)})

    # Tock is skipped; the other event of its file is not.
    assert (done.returncode, done.stdout) == (
        0,
        "2026-11-03 12:30 Team lunch\n"
        "2026-11-04 all day Recycling day\n"
        "2026-11-04 10:00 Ping (and 99 more until 2026-11-04 11:39)\n",
    )
    assert done.stderr.splitlines()[1:] == [
        "skipped event 'Tock' in hostile/minutes.ics: it repeats up to 443461 "
        "times from its start to the days asked, more than 50000",
        "skipped event 'Tick' in hostile/seconds.ics: it repeats up to 215996401 "
        "times from its start to the days asked, more than 50000",
    ]


def test_calendar_budget_is_shared_by_all_files(vdir: Path) -> None:
    # Seven events of 48,901 minutes each: each fits, the seventh overflows
    # the 300,000 all files may expand together.
    for index in range(7):
        write_ics(
            vdir / "busy" / f"minutes-{index}.ics",
            MINUTELY_ALL_YEAR.replace("every-minute", f"minute-{index}")
            .replace("20260101T000000Z", "20261001T000000Z")
            .replace("SUMMARY:Tock", f"SUMMARY:Tock {index}"),
        )
    done = run_helper("2026-11-03", "1", env={"CALENDAR_DIR": str(vdir)})

    lines = done.stdout.splitlines()
    assert [line for line in lines if "Tock" in line] == [
        f"2026-11-03 00:00 Tock {index} (and 1439 more until 2026-11-03 23:59)"
        for index in range(6)
    ]
    assert done.stderr.splitlines()[1:] == [
        "skipped event 'Tock 6' in busy/minutes-6.ics: it repeats up to 48901 "
        "times from its start to the days asked, more than the 6529 left of the "
        "300000 for all files"
    ]


def test_a_large_ordinary_calendar_is_never_skipped(vdir: Path) -> None:
    # Forty birthdays as Outlook writes them, since 1950, and thirty daily
    # events begun ten years ago: far below what the counts refuse.
    for index in range(40):
        write_ics(
            vdir / "birthdays" / f"person-{index}.ics",
            f"""
            BEGIN:VEVENT
            UID:birthday-{index}
            DTSTAMP:20260901T120000Z
            DTSTART;VALUE=DATE:19501103
            RRULE:FREQ=YEARLY;BYMONTH=11;BYMONTHDAY=3
            SUMMARY:Birthday {index:02}
            END:VEVENT
            """,
        )
    for index in range(30):
        write_ics(
            vdir / "daily" / f"habit-{index}.ics",
            f"""
            BEGIN:VEVENT
            UID:habit-{index}
            DTSTAMP:20260901T120000Z
            DTSTART:20160101T{index % 24:02}0000Z
            RRULE:FREQ=DAILY
            SUMMARY:Habit {index:02}
            END:VEVENT
            """,
        )
    done = run_helper("2026-11-03", "1", env={"CALENDAR_DIR": str(vdir)})

    lines = done.stdout.splitlines()
    assert len([line for line in lines if "Birthday" in line]) == 40
    assert len([line for line in lines if "Habit" in line]) == 30
    assert "2026-11-03 12:30 Team lunch" in lines
    assert done.stderr.splitlines()[1:] == []


def run_helper(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run calendar.py by hand, as a person checking it does."""
    return subprocess.run(
        [str(EXAMPLES / "calendar.py"), *args],
        env={"PATH": os.environ["PATH"], "TZ": ZONE, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_broken_file_is_reported_on_stderr_only(vdir: Path) -> None:
    done = run_helper("2026-11-03", "1", env={"CALENDAR_DIR": str(vdir)})

    assert (done.returncode, done.stdout) == (0, "2026-11-03 12:30 Team lunch\n")
    assert done.stderr.startswith("skipped work/broken.ics: ")


def test_self_test() -> None:
    done = run_helper("--test", env={})

    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "ok: self-test passed (4 events as expected)\n",
        "",
    )
