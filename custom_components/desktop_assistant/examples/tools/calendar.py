#!/usr/bin/env python3
"""List the events of a vdir (vdirsyncer's folder of .ics files) for some days.

calendar.py START DAYS
  START  the first day, YYYY-MM-DD, today or tomorrow; empty for today
  DAYS   how many days, 1 to 366; empty for 1
calendar.py --test
  checks itself on a calendar folder it writes to a temporary directory

Environment:
  CALENDAR_DIR  the vdir: one folder per calendar holding .ics files
                (default ~/.local/share/calendars)
  TZ            the local time zone (Home Assistant's; else the system's)

Prints one line per event, sorted: `YYYY-MM-DD HH:MM summary` in local time
or `YYYY-MM-DD all day summary`; an event longer than a day ends with
`(until ...)`. Prints `no events` when there are none. Recurrence (RRULE,
RDATE, EXDATE, RECURRENCE-ID overrides, VTIMEZONE rules) is expanded by
icalendar and recurring-ical-events, the integration's requirements.

A hostile or broken file costs bounded work and hides nothing else: before
expanding, each event's rules are counted (an upper bound of the occurrences
the expansion steps through from DTSTART to the end of the asked days, from
FREQ, INTERVAL, the BY parts that add occurrences, UNTIL, and COUNT when no
BY part filters); an event above MAX_EVENT_OCCURRENCES, or above what is left
of TOTAL_OCCURRENCES for all files together, is skipped (with its overrides)
and named on stderr with its file. The answer depends on the files and the
days asked, never on how busy the machine is. BUDGET_SECONDS, far above what
the counts allow, only guards against a cost the counts miss (files with
rules repeating more often than daily are read last). An event repeating
more than MAX_REPEATS times in the asked days is one line,
`... (and N more until ...)`. A broken file is skipped and named on stderr.
"""

# helperlib takes this folder off the import path: this file is named like the
# standard library's calendar module, which dateutil (below) imports.
from helperlib import (
    HelperError,
    OutOfTime,
    calendar_folder,
    local_zone,
    run,
    time_limit,
    whole_number,
)

# isort: split
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
import re
import sys
import tempfile
import textwrap
from time import monotonic as clock
from typing import Any
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events

MAX_DAYS = 366
# Occurrences the expansion may step through for one event (a year of a
# minutely rule is 525,600), and for all events of all files: about 130,000
# a second on a quiet machine, so a few seconds on a busy one, within the
# tool's timeout; the total holds some 75 daily events begun ten years ago.
MAX_EVENT_OCCURRENCES = 50_000
TOTAL_OCCURRENCES = 300_000
# A last resort for a cost the counts miss; calendar.toml gives the tool 15.
BUDGET_SECONDS = 12.0
# Occurrences of one event listed one by one; more become one line.
MAX_REPEATS = 31
# Rules that can give thousands of occurrences a day.
FREQUENT = re.compile(rb"FREQ=(SECONDLY|MINUTELY|HOURLY)", re.IGNORECASE)
DAY = 86_400
# The shortest time between two steps of each frequency, in seconds.
PERIODS = {
    "SECONDLY": 1,
    "MINUTELY": 60,
    "HOURLY": 3_600,
    "DAILY": DAY,
    "WEEKLY": 7 * DAY,
    "MONTHLY": 28 * DAY,
    "YEARLY": 365 * DAY,
}
# BY parts finer than a rule's frequency multiply the occurrences of each
# step (the days of a weekly, monthly or yearly step: `days_per_step`).
TIME_PARTS = {"BYHOUR": 3_600, "BYMINUTE": 60, "BYSECOND": 1}


@dataclass(frozen=True, order=True)
class Line:
    """One event as printed; the fields before `text` sort the lines."""

    day: date
    # All-day events come first on their day, timed ones by time.
    timed: bool
    clock: time
    text: str


def main(arguments: list[str]) -> str:
    """List the events of the asked days."""
    zone = local_zone()
    start = parse_start(arguments[0].strip() if arguments else "", zone)
    days = parse_days(arguments[1].strip() if len(arguments) > 1 else "")
    root = calendar_folder()
    return "\n".join(event_lines(root, start, days, zone)) or "no events"


def parse_start(text: str, zone: tzinfo | None) -> date:
    """Read START: an ISO date, today or tomorrow; empty is today."""
    today = datetime.now(zone).date() if zone else datetime.now().date()
    if text.lower() in ("", "today"):
        return today
    if text.lower() == "tomorrow":
        return today + timedelta(days=1)
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise HelperError(
            f"start must be a date like 2026-10-22, got {text!r}"
        ) from None


def parse_days(text: str) -> int:
    """Read DAYS: a whole number from 1 to 366; empty is 1."""
    if not text:
        return 1
    return whole_number(
        text,
        MAX_DAYS,
        f"days must be a whole number from 1 to {MAX_DAYS}, got {text!r}",
    )


def event_lines(root: Path, start: date, days: int, zone: tzinfo | None) -> list[str]:
    """Return the lines of every event overlapping the days, sorted."""
    span = (
        local_midnight(start, zone),
        local_midnight(start + timedelta(days=days), zone),
    )
    deadline = clock() + BUDGET_SECONDS
    budget = Budget(TOTAL_OCCURRENCES)
    lines: set[Line] = set()
    for path, data in calendar_files(root):
        name = path.relative_to(root)
        try:
            if clock() >= deadline:
                raise OutOfTime
            with time_limit(deadline - clock()):
                lines.update(file_lines(data, span, zone, Source(str(name), budget)))
        except OutOfTime:
            print(f"skipped {name}: out of time expanding its events", file=sys.stderr)
        except Exception as err:  # A broken file must not hide the others.
            print(f"skipped {name}: {err}", file=sys.stderr)
    return [line.text for line in sorted(lines)]


@dataclass
class Budget:
    """The occurrences all files together may still expand."""

    left: int


@dataclass(frozen=True)
class Source:
    """The file being read, named as stderr names it, and the shared budget."""

    name: str
    budget: Budget


def calendar_files(root: Path) -> list[tuple[Path, bytes]]:
    """Return the .ics files and their bytes, those with frequent rules last."""
    files = []
    for path in sorted(root.rglob("*.ics")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        try:
            files.append((path, path.read_bytes()))
        except OSError as err:
            print(f"skipped {path.relative_to(root)}: {err.strerror}", file=sys.stderr)
    return sorted(files, key=lambda file: FREQUENT.search(file[1]) is not None)


def file_lines(
    data: bytes, span: tuple[datetime, datetime], zone: tzinfo | None, source: Source
) -> list[Line]:
    """Return one file's lines; an event repeating too often is one line."""
    calendar = icalendar.Calendar.from_ical(data)
    skip_floods(calendar, span[1], zone, source)
    series: dict[str, list[Line]] = {}
    for event in recurring_ical_events.of(calendar).between(*span):
        if str(event.get("STATUS", "")).upper() != "CANCELLED":
            key = str(event.get("UID") or event.get("SUMMARY", ""))
            series.setdefault(key, []).append(describe(event, zone))
    lines = []
    for occurrences in series.values():
        occurrences.sort()
        if len(occurrences) <= MAX_REPEATS:
            lines += occurrences
            continue
        first, last = occurrences[0], occurrences[-1]
        until = f"{last.day} {last.clock:%H:%M}" if last.timed else f"{last.day}"
        more = f" (and {len(occurrences) - 1} more until {until})"
        lines.append(replace(first, text=first.text + more))
    return lines


def skip_floods(
    calendar: Any, end: datetime, zone: tzinfo | None, source: Source
) -> None:
    """Take out of `calendar` the events whose expansion would cost too much."""
    skipped: set[str] = set()
    for event in calendar.walk("VEVENT"):
        key = str(event.get("UID") or event.get("SUMMARY", ""))
        if key in skipped:
            continue
        steps = occurrences_up_to(event, end, zone)
        if steps > MAX_EVENT_OCCURRENCES:
            limit = f"more than {MAX_EVENT_OCCURRENCES}"
        elif steps > source.budget.left:
            limit = (
                f"more than the {source.budget.left} left of the "
                f"{TOTAL_OCCURRENCES} for all files"
            )
        else:
            source.budget.left -= steps
            continue
        skipped.add(key)
        summary = " ".join(str(event.get("SUMMARY", "")).split()) or "(no title)"
        print(
            f"skipped event {summary!r} in {source.name}: it repeats up to {steps} "
            f"times from its start to the days asked, {limit}",
            file=sys.stderr,
        )
    calendar.subcomponents = [
        component
        for component in calendar.subcomponents
        if component.name != "VEVENT"
        or str(component.get("UID") or component.get("SUMMARY", "")) not in skipped
    ]


def occurrences_up_to(event: Any, end: datetime, zone: tzinfo | None) -> int:
    """Return an upper bound of the occurrences expanding `event` to `end` gives."""
    rules = [*as_list(event.get("RRULE")), *as_list(event.get("EXRULE"))]
    if not rules:
        return 1
    start = as_moment(event.decoded("DTSTART"), zone)
    return sum(rule_steps(rule, start, end, zone) for rule in rules)


def rule_steps(rule: Any, start: datetime, end: datetime, zone: tzinfo | None) -> int:
    """Return an upper bound of the occurrences one rule gives from start to end."""
    period = PERIODS[str(rule["FREQ"][0]).upper()]
    step = period * max(1, int(rule.get("INTERVAL", [1])[0]))
    per_step = days_per_step(rule, period)
    for part, size in TIME_PARTS.items():
        if period > size and part in rule:
            per_step *= len(rule[part])
    if "UNTIL" in rule:
        end = min(end, as_moment(rule["UNTIL"][0], zone))
    steps = (max(0, int((end - start).total_seconds())) // step + 1) * per_step
    if "COUNT" in rule and not any(part.startswith("BY") for part in rule):
        return min(steps, int(rule["COUNT"][0]))
    return steps


def days_per_step(rule: Any, period: int) -> int:
    """Return at most how many days a weekly, monthly or yearly step gives."""
    if period <= DAY:
        return 1
    # Each weekday comes at most five times a month.
    in_month = len(rule.get("BYMONTHDAY", ())) or 5 * len(rule.get("BYDAY", ())) or 1
    if period == PERIODS["WEEKLY"]:
        return len(rule.get("BYDAY", ())) or 1
    if period == PERIODS["MONTHLY"]:
        return min(31, in_month)
    if "BYYEARDAY" in rule or "BYWEEKNO" in rule:
        return 366
    # BYMONTHDAY or BYDAY without BYMONTH mean every month of the year.
    every_month = "BYMONTHDAY" in rule or "BYDAY" in rule
    months = len(rule.get("BYMONTH", ())) or (12 if every_month else 1)
    return min(366, months * in_month)


def as_list(value: Any) -> list[Any]:
    """Return a property that may appear once or more as a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def as_moment(value: date | datetime, zone: tzinfo | None) -> datetime:
    """Return a date, floating or zoned time as an aware datetime, to compare."""
    if not isinstance(value, datetime):
        return local_midnight(value, zone)
    if value.tzinfo is None:
        return value.replace(tzinfo=zone) if zone else value.astimezone()
    return value


def local_midnight(day: date, zone: tzinfo | None) -> datetime:
    """Return the start of a local day as an aware datetime."""
    midnight = datetime.combine(day, time())
    return midnight.replace(tzinfo=zone) if zone else midnight.astimezone()


def describe(event: Any, zone: tzinfo | None) -> Line:
    """Return one occurrence's line; times with a zone are shown in local time."""
    summary = " ".join(str(event.get("SUMMARY", "")).split()) or "(no title)"
    start = event.decoded("DTSTART")
    end = event.decoded("DTEND") if "DTEND" in event else None
    if not isinstance(start, datetime):
        last_day = end - timedelta(days=1) if isinstance(end, date) else start
        until = f" (until {last_day.isoformat()})" if last_day > start else ""
        return Line(
            start, False, time(), f"{start.isoformat()} all day {summary}{until}"
        )
    start = local(start, zone)
    text = f"{start:%Y-%m-%d %H:%M} {summary}"
    if isinstance(end, datetime):
        end = local(end, zone)
        # Ending at the midnight after it starts still fits in one day.
        if end > next_midnight(start):
            text += f" (until {end:%Y-%m-%d %H:%M})"
    return Line(start.date(), True, start.time(), text)


def local(moment: datetime, zone: tzinfo | None) -> datetime:
    """Return a time with a zone in local time; a floating time as it is."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(zone) if zone else moment.astimezone()


def next_midnight(moment: datetime) -> datetime:
    """Return the midnight that ends the day of `moment`, in its own zone."""
    return datetime.combine(moment.date() + timedelta(days=1), time(), moment.tzinfo)


SELF_TEST_FILES = {
    "personal/dentist.ics": """
        BEGIN:VEVENT
        UID:dentist
        DTSTART;TZID=Europe/Rome:20261023T103000
        DTEND;TZID=Europe/Rome:20261023T110000
        SUMMARY:Dentist
        END:VEVENT
    """,
    "personal/birthday.ics": """
        BEGIN:VEVENT
        UID:birthday
        DTSTART;VALUE=DATE:19800924
        DTEND;VALUE=DATE:19800925
        RRULE:FREQ=YEARLY
        SUMMARY:Anna's birthday
        END:VEVENT
    """,
    "work/standup.ics": """
        BEGIN:VEVENT
        UID:standup
        DTSTART;TZID=Europe/Rome:20260921T090000
        DTEND;TZID=Europe/Rome:20260921T091500
        RRULE:FREQ=WEEKLY;BYDAY=MO,TH
        EXDATE;TZID=Europe/Rome:20260924T090000
        SUMMARY:Standup
        END:VEVENT
        BEGIN:VEVENT
        UID:standup
        RECURRENCE-ID;TZID=Europe/Rome:20260921T090000
        DTSTART;TZID=Europe/Rome:20260921T140000
        DTEND;TZID=Europe/Rome:20260921T141500
        SUMMARY:Standup (moved)
        END:VEVENT
    """,
}
SELF_TEST_EXPECTED = [
    "2026-09-21 14:00 Standup (moved)",
    "2026-09-24 all day Anna's birthday",
    "2026-09-28 09:00 Standup",
    "2026-10-23 10:30 Dentist",
]


def self_test() -> int:
    """Check a one-off, a yearly, an EXDATE and a moved occurrence; print the result."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, body in SELF_TEST_FILES.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:self-test"]
            lines += textwrap.dedent(body).strip().splitlines()
            path.write_text("\r\n".join([*lines, "END:VCALENDAR", ""]), newline="")
        zone = ZoneInfo("Europe/Rome")
        got = event_lines(root, date(2026, 9, 21), 8, zone)
        got += event_lines(root, date(2026, 10, 23), 1, zone)
    if got != SELF_TEST_EXPECTED:
        print(f"self-test failed:\nexpected {SELF_TEST_EXPECTED}\ngot      {got}")
        return 1
    print(f"ok: self-test passed ({len(got)} events as expected)")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--test"]:
        sys.exit(self_test())
    run(main)
