"""A job's run takes its duration from one clock, whatever HA's clock does."""

from datetime import timedelta
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest

from custom_components.desktop_assistant.jobs.runs import (
    JOB_RETENTION,
    async_run_job,
    list_runs,
)
from custom_components.desktop_assistant.record import Record
from custom_components.desktop_assistant.runtime import DATA_STORE


@pytest.mark.freeze_time("2026-11-20 20:00:00+00:00")  # noon in the tests' zone
async def test_a_job_run_lasts_what_it_lasted_when_the_clock_is_set_back(
    hass: HomeAssistant, record: Record, freezer: Any
) -> None:
    async def set_back_a_month() -> int:
        freezer.move_to(dt_util.utcnow() - timedelta(days=30))
        return 0

    await async_run_job(
        hass,
        JOB_RETENTION,
        "person",
        set_back_a_month,
        lambda deleted: {"deleted": deleted},
    )
    (run,) = await hass.data[DATA_STORE].async_run(
        lambda db: list_runs(db, JOB_RETENTION)
    )
    assert run["outcome"] == "ok"
    assert 0.0 <= run["duration"] < 3600.0
