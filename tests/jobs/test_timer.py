"""The registry times every job: daily at its declared time, a missed run caught up.

Retention (04:00) and the nightly pass (03:00, the option of the entry that
times it) alike, from fixed instants around their times, before midnight
and on both days the clocks change, never the real time of day. The jobs
are the integration's own, set up in HA's harness with an agent's entry
on the scripted llama-server.
"""

from datetime import datetime, time as dt_time, timedelta
import logging
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant.jobs.registry import (
    RegisteredJob,
    registered_jobs,
)
from custom_components.desktop_assistant.jobs.timer import CATCH_UP_DELAY
from custom_components.desktop_assistant.runtime import DATA_STORE
from custom_components.desktop_assistant.store import transaction
from tests.harness.agent import Agent
from tests.harness.database_lock import lock_the_database, release
from tests.harness.fixed_time import AT_FIXED_NOON, START_INSTANTS, next_local_time

# Each job of the integration at the time it declares (the nightly pass's
# is the entry options' default).
JOB_TIMES = {"nightly": dt_time(3, 0), "retention": dt_time(4, 0)}
EACH_JOB = pytest.mark.parametrize("job", list(JOB_TIMES))


def registered(hass: HomeAssistant, job: str) -> RegisteredJob:
    return registered_jobs(hass)[job]


async def triggers(hass: HomeAssistant, job: str) -> list[str]:
    """The job's runs' triggers, newest first, once the runs under way ended.

    A start at the job's very second runs it then, as Home Assistant would.
    """
    await hass.async_block_till_done(wait_background_tasks=True)
    return [run["trigger"] for run in await registered(hass, job).async_runs(10)]


async def up_to_just_before(
    hass: HomeAssistant, freezer: Any, job: str, at: dt_time
) -> tuple[datetime, list[str]]:
    """Move to a second before the next `at`, running what falls due.

    Return that time and the job's triggers then; Home Assistant fires a
    time-of-day timer within the second after it, so move a second past it.
    """
    due = next_local_time(at.hour, at.minute)
    freezer.move_to(due - timedelta(seconds=1))
    async_fire_time_changed(hass)
    return due, await triggers(hass, job)


async def first_seen_two_days_ago(hass: HomeAssistant, job: str) -> None:
    """Make the job's last two runs missed, as after two days down."""
    at = (dt_util.now() - timedelta(days=2)).timestamp()

    def seen(connection: Any) -> None:
        with transaction(connection):
            connection.execute(
                "INSERT OR REPLACE INTO job_first_seen (job, at) VALUES (?, ?)",
                (job, at),
            )

    await hass.data[DATA_STORE].async_run(seen)


async def wait_out_the_catch_up_delay(
    hass: HomeAssistant, freezer: Any, times: int
) -> None:
    """Let the catch-up delay pass `times` times, with what each one starts."""
    for _ in range(times):
        freezer.tick(timedelta(seconds=CATCH_UP_DELAY + 1))
        async_fire_time_changed(hass)
        await hass.async_block_till_done(wait_background_tasks=True)


@START_INSTANTS
@EACH_JOB
async def test_each_job_runs_at_its_declared_time(
    hass: HomeAssistant, agent: Agent, freezer: Any, start: datetime, job: str
) -> None:
    assert dt_util.now() == start  # frozen before Home Assistant set its timers
    await triggers(hass, job)
    due, before = await up_to_just_before(hass, freezer, job, JOB_TIMES[job])
    freezer.move_to(due + timedelta(seconds=1))
    async_fire_time_changed(hass)
    assert await triggers(hass, job) == ["schedule", *before]
    # And the next day again, at the same wall-clock time.
    due, before = await up_to_just_before(hass, freezer, job, JOB_TIMES[job])
    freezer.move_to(due + timedelta(seconds=1))
    async_fire_time_changed(hass)
    assert await triggers(hass, job) == ["schedule", *before]


@AT_FIXED_NOON
@EACH_JOB
async def test_a_run_missed_while_down_runs_soon_after_start(
    hass: HomeAssistant, agent: Agent, freezer: Any, job: str
) -> None:
    timer = registered(hass, job).timer
    await first_seen_two_days_ago(hass, job)
    assert await timer.async_missed(JOB_TIMES[job], dt_util.now())
    timer.async_start()  # as at a start
    await hass.async_block_till_done(wait_background_tasks=True)
    assert await triggers(hass, job) == []
    await wait_out_the_catch_up_delay(hass, freezer, times=1)
    assert await triggers(hass, job) == ["catch_up"]
    assert not await timer.async_missed(JOB_TIMES[job], dt_util.now())


@AT_FIXED_NOON
@EACH_JOB
async def test_no_catch_up_when_the_last_run_was_on_time(
    hass: HomeAssistant, agent: Agent, freezer: Any, job: str
) -> None:
    await first_seen_two_days_ago(hass, job)
    await registered(hass, job).async_run("person")
    timer = registered(hass, job).timer
    assert not await timer.async_missed(JOB_TIMES[job], dt_util.now())
    timer.async_start()
    await wait_out_the_catch_up_delay(hass, freezer, times=2)
    assert await triggers(hass, job) == ["person"]


@AT_FIXED_NOON
async def test_a_new_install_has_missed_nothing(
    hass: HomeAssistant, agent: Agent, freezer: Any
) -> None:
    await wait_out_the_catch_up_delay(hass, freezer, times=2)
    assert [await triggers(hass, job) for job in JOB_TIMES] == [[], []]


@AT_FIXED_NOON
@EACH_JOB
async def test_a_locked_database_at_start_checks_for_a_missed_run_later(
    hass: HomeAssistant,
    agent: Agent,
    freezer: Any,
    caplog: pytest.LogCaptureFixture,
    job: str,
) -> None:
    caplog.set_level(logging.INFO)
    await first_seen_two_days_ago(hass, job)
    other = lock_the_database(hass)
    registered(hass, job).timer.async_start()
    await hass.async_block_till_done(wait_background_tasks=True)
    assert f"Checking for a missed {job} run later: database is locked" in caplog.text
    release(other)

    # The check again, then the catch-up it finds missed.
    await wait_out_the_catch_up_delay(hass, freezer, times=2)
    assert await triggers(hass, job) == ["catch_up"]


@AT_FIXED_NOON
async def test_a_check_that_outlives_its_timers_sets_none(
    hass: HomeAssistant, agent: Agent, freezer: Any
) -> None:
    timer = registered(hass, "nightly").timer
    await first_seen_two_days_ago(hass, "nightly")
    other = lock_the_database(hass)
    timer.async_start()
    timer.async_stop()  # the entry unloads while the check waits for the lock
    await hass.async_block_till_done(wait_background_tasks=True)
    release(other)

    await wait_out_the_catch_up_delay(hass, freezer, times=2)
    assert await triggers(hass, "nightly") == []


@START_INSTANTS
@EACH_JOB
async def test_a_locked_database_at_the_scheduled_time_skips_that_run(
    hass: HomeAssistant,
    agent: Agent,
    freezer: Any,
    caplog: pytest.LogCaptureFixture,
    start: datetime,
    job: str,
) -> None:
    assert dt_util.now() == start
    caplog.set_level(logging.INFO)
    due, before = await up_to_just_before(hass, freezer, job, JOB_TIMES[job])
    other = lock_the_database(hass)
    freezer.move_to(due + timedelta(seconds=1))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert f"The {job} job (schedule) did not start: database is locked" in caplog.text
    release(other)

    assert await triggers(hass, job) == before
    assert (await registered(hass, job).async_run("person"))["outcome"] != "running"
