#!/usr/bin/env python3
"""Add an event to a vdir (vdirsyncer's folder of .ics files), one file per event.

calendar_add.py TITLE START [DURATION] [CALENDAR]
  TITLE     what the event is
  START     YYYY-MM-DD for a whole day, or YYYY-MM-DD HH:MM in local time
            (an offset such as +02:00 or Z names another zone)
  DURATION  minutes; empty for 60, or one day for a whole-day event
  CALENDAR  the calendar's folder name or display name; empty for the first

Environment:
  CALENDAR_DIR  the vdir: one folder per calendar holding .ics files
                (default ~/.local/share/calendars)
  TZ            the local time zone (Home Assistant's; else the system's)

Writes `<uid>.ics` with a UID, DTSTAMP and the start in the local zone (its
VTIMEZONE included), through a temporary file renamed into place, so a sync
never sees half a file. Refuses a start in the past and a local time that
the clocks skip. Prints `added to <calendar>: <when> <title>`.
"""

from helperlib import (
    HelperError,
    calendar_folder,
    local_zone,
    now,
    run,
    whole_number,
)

# isort: split
from datetime import UTC, date, datetime, timedelta, tzinfo
import math
import os
from pathlib import Path
import uuid
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import icalendar

DEFAULT_MINUTES = 60
MAX_MINUTES = 366 * 24 * 60
PRODID = "-//desktop_assistant//calendar_add//EN"


def main(arguments: list[str]) -> str:
    """Add the event; say where and when."""
    title, start_text, minutes_text, wanted = (arguments + [""] * 4)[:4]
    title = " ".join(title.split())
    if not title:
        raise HelperError("title is empty: say what the event is")
    zone = local_zone()
    start = parse_start(start_text.strip(), zone)
    minutes = parse_minutes(minutes_text.strip())
    folder, name = find_calendar(calendar_folder(), wanted.strip())
    event = build_event(title, start, minutes)
    write_atomically(folder, event)
    return f"added to {name}: {describe(event, zone)}"


def parse_start(text: str, zone: tzinfo | None) -> date | datetime:
    """Read START: a future date, or a future time in the local zone."""
    if not text:
        raise HelperError("start is empty: give a date like 2026-10-22")
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            if day < now(zone).date():
                raise HelperError(f"{text} is in the past")
            return day
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise HelperError(
            f"start must be like 2026-10-22 or 2026-10-22 14:30, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = in_zone(moment, named_zone(zone))
    elif not isinstance(moment.tzinfo, ZoneInfo):
        # An offset names no zone a TZID could: the instant is kept in UTC.
        moment = moment.astimezone(UTC)
    if moment <= now(zone):
        raise HelperError(f"{text} is in the past")
    return moment


def named_zone(zone: tzinfo | None) -> ZoneInfo:
    """Return the local zone by its IANA name, which a TZID must be.

    Without TZ the system's zone is read from /etc/localtime, whose name is
    where the link points (.../zoneinfo/Europe/Rome); with neither, the local
    time is UTC. A zone with no name (a TZ rule, a copied file) is refused
    rather than guessed.
    """
    names = [str(zone)] if zone is not None else []
    link = Path("/etc/localtime")
    from_tz = bool(os.environ.get("TZ"))
    if not from_tz and link.is_symlink():
        parts = link.resolve().parts
        if "zoneinfo" in parts:
            names.append("/".join(parts[parts.index("zoneinfo") + 1 :]))
    for name in names:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    if not from_tz and not link.exists():
        return ZoneInfo("UTC")
    raise HelperError(
        "the local time zone has no name an event can carry:"
        " set TZ to one, such as TZ=Europe/Rome"
    )


def in_zone(wall: datetime, zone: ZoneInfo) -> datetime:
    """Return a wall-clock time in a zone; the first of two on a repeated hour."""
    moment = wall.replace(tzinfo=zone, fold=0)
    if moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
        raise HelperError(
            f"{wall:%Y-%m-%d %H:%M} does not exist in {zone.key}: "
            "the clocks skip that hour"
        )
    return moment


def parse_minutes(text: str) -> int | None:
    """Read DURATION: whole minutes; empty is the default for the kind of event."""
    if not text:
        return None
    return whole_number(
        text,
        MAX_MINUTES,
        f"duration must be a whole number of minutes from 1 to {MAX_MINUTES}",
    )


def find_calendar(root: Path, wanted: str) -> tuple[Path, str]:
    """Return the calendar's folder and name in the vdir: the one named, else the first."""
    calendars = {
        folder: display_name(folder)
        for folder in sorted(root.iterdir())
        if folder.is_dir() and not folder.name.startswith(".")
    }
    if not calendars:
        raise HelperError("the calendar folder has no calendars (sub-folders)")
    if not wanted:
        return next(iter(calendars.items()))
    for folder, name in calendars.items():
        if wanted.casefold() in (folder.name.casefold(), name.casefold()):
            return folder, name
    names = ", ".join(calendars.values())
    raise HelperError(f"no calendar is called {wanted!r} (calendars: {names})")


def display_name(folder: Path) -> str:
    """Return vdirsyncer's `displayname` of a calendar, else its folder name."""
    try:
        name = (folder / "displayname").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        name = ""
    return name or folder.name


def build_event(
    title: str, start: date | datetime, minutes: int | None
) -> icalendar.Calendar:
    """Return a calendar holding the one event, its time zone included."""
    event = icalendar.Event()
    event.add("uid", f"{uuid.uuid4()}@desktop-assistant")
    event.add("dtstamp", datetime.now(UTC))
    event.add("summary", title)
    event.add("dtstart", start)
    if isinstance(start, datetime):
        end = exact_end(start, minutes or DEFAULT_MINUTES)
    else:
        end = start + timedelta(days=math.ceil((minutes or 24 * 60) / (24 * 60)))
    event.add("dtend", end)
    calendar = icalendar.Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add_component(event)
    if isinstance(start, datetime):
        calendar.add_missing_timezones(
            first_date=date(start.year, 1, 1), last_date=date(end.year + 1, 1, 1)
        )
    return calendar


def exact_end(start: datetime, minutes: int) -> datetime:
    """Return the end `minutes` of real time later, in the start's zone.

    Across a change of the clocks that is not the same wall-clock distance.
    An end whose wall-clock time happens twice is written in UTC, which
    cannot be read as the other one.
    """
    end = (start.astimezone(UTC) + timedelta(minutes=minutes)).astimezone(start.tzinfo)
    if end.replace(fold=0).astimezone(UTC) != end.astimezone(UTC):
        return end.astimezone(UTC)
    return end


def describe(calendar: icalendar.Calendar, zone: tzinfo | None) -> str:
    """Return the event as the calendar tool lists it, in local time."""
    (event,) = calendar.walk("VEVENT")
    start = event.decoded("DTSTART")
    summary = str(event["SUMMARY"])
    if not isinstance(start, datetime):
        last_day = event.decoded("DTEND") - timedelta(days=1)
        until = f" (until {last_day.isoformat()})" if last_day > start else ""
        return f"{start.isoformat()} all day {summary}{until}"
    start = start.astimezone(zone)
    end = event.decoded("DTEND").astimezone(zone)
    until = f"{end:%H:%M}" if end.date() == start.date() else f"{end:%Y-%m-%d %H:%M}"
    return f"{start:%Y-%m-%d %H:%M} {summary} (until {until})"


def write_atomically(folder: Path, calendar: icalendar.Calendar) -> Path:
    """Write the event's file as a whole, named after its UID; return its path.

    The temporary file starts with a dot and does not end in .ics, so neither
    the calendar tool nor vdirsyncer reads it half written.
    """
    (event,) = calendar.walk("VEVENT")
    uid = str(event["UID"])
    path = folder / f"{uid}.ics"
    temporary = folder / f".{uid}.ics.tmp"
    try:
        with temporary.open("xb") as file:
            file.write(calendar.to_ical())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as err:
        temporary.unlink(missing_ok=True)
        raise HelperError(
            f"cannot write to the calendar {folder.name}: {err.strerror or err}"
        ) from None
    return path


if __name__ == "__main__":
    run(main)
