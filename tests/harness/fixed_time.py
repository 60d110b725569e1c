"""Fixed instants for tests that move the clock, and the next time of day.

Tests run in pytest-homeassistant-custom-component's time zone at any hour;
moving the clock from the real "now" may cross midnight or fire the nightly
pass (03:00) and retention (04:00). Tests start here instead.
"""

from datetime import datetime, timedelta

from homeassistant.util import dt as dt_util
import pytest

# The tests' time zone (pytest-homeassistant-custom-component's).
TESTS_TIME_ZONE = dt_util.get_time_zone("US/Pacific")


def local(*when: int) -> datetime:
    """A wall-clock time of the tests' time zone."""
    return datetime(*when, tzinfo=TESTS_TIME_ZONE)


# Noon on an ordinary Friday: hours from midnight, the jobs and a DST change.
FIXED_NOON = local(2026, 11, 20, 12, 0)
AT_FIXED_NOON = pytest.mark.freeze_time(FIXED_NOON)
# Tests of the jobs' times start at each of these: around the nightly pass
# (03:00) and retention (04:00), before midnight, and on both days the
# clocks change.
START_INSTANTS = pytest.mark.parametrize(
    "start",
    [
        pytest.param(instant, marks=pytest.mark.freeze_time(instant), id=name)
        for name, instant in (
            ("00:30", local(2026, 11, 20, 0, 30)),
            ("02:59", local(2026, 11, 20, 2, 59)),
            ("03:00", local(2026, 11, 20, 3, 0)),
            ("03:01", local(2026, 11, 20, 3, 1)),
            ("04:00", local(2026, 11, 20, 4, 0)),
            ("23:59", local(2026, 11, 20, 23, 59)),
            ("dst-starts", local(2026, 3, 8, 0, 30)),
            ("dst-ends", local(2026, 11, 1, 0, 30)),
        )
    ],
)


def next_local_time(hour: int, minute: int) -> datetime:
    """The next `hour:minute` of the local day after now, in UTC for the freezer."""
    now = dt_util.now()
    at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at <= now:
        at += timedelta(days=1)  # the same wall-clock time, across a DST change too
    return dt_util.as_utc(at)
