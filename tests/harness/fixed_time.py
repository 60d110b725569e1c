"""A fixed instant for tests that move the clock, far from every scheduled job.

Tests run in pytest-homeassistant-custom-component's time zone at any hour;
moving the clock from the real "now" may cross midnight or fire the nightly
pass (03:00) and retention (04:00). Tests start here instead.
"""

from datetime import datetime

from homeassistant.util import dt as dt_util
import pytest

# The tests' time zone (pytest-homeassistant-custom-component's).
TESTS_TIME_ZONE = dt_util.get_time_zone("US/Pacific")
# Noon on an ordinary Friday: hours from midnight, the jobs and a DST change.
FIXED_NOON = datetime(2026, 11, 20, 12, 0, tzinfo=TESTS_TIME_ZONE)
AT_FIXED_NOON = pytest.mark.freeze_time(FIXED_NOON)
