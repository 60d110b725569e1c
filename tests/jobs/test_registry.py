"""The jobs registry: what a feature registers is listed, run and recorded.

Jobs made here are real `Job`s registered in the integration, set up in
HA's harness; the Jobs page's commands go through HA's websocket API.
"""

import asyncio
from datetime import time as dt_time, timedelta
from pathlib import Path
import sqlite3
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.jobs import JobResult, async_register_job
from custom_components.desktop_assistant.jobs.outcome import Outcome
from custom_components.desktop_assistant.jobs.runs import (
    RunEnd,
    finish_run,
    insert_run,
    interrupted_runs,
    list_runs,
)
from custom_components.desktop_assistant.runtime import DATA_STORE
from custom_components.desktop_assistant.store import DB_FILE, in_order, transaction
from custom_components.desktop_assistant.store.store import REOPEN_DELAY, connect

# The jobs' migration that made an outcome a kind and a detail.
OUTCOMES_VERSION = 9


class MadeJob:
    """A job whose run does what the test hands it."""

    def __init__(self, name: str, work: Any, schedule: dt_time | None = None) -> None:
        self.name = name
        self.schedule = schedule
        self.work = work
        self.triggers: list[str] = []
        self.job_runs: list[int] = []

    async def async_run(self, trigger: str, job_run: int) -> JobResult:
        self.triggers.append(trigger)
        self.job_runs.append(job_run)
        return await self.work()


@pytest.fixture
async def integration(hass: HomeAssistant) -> HomeAssistant:
    assert await async_setup_component(hass, DOMAIN, {})
    return hass


async def runs_of(hass: HomeAssistant, job: str) -> list[dict[str, Any]]:
    return await hass.data[DATA_STORE].async_run(lambda db: list_runs(db, job))


async def command(client: Any, **message: Any) -> dict[str, Any]:
    await client.send_json_auto_id(message)
    return await client.receive_json()


@pytest.mark.freeze_time("2026-11-20 20:00:00+00:00")  # noon in the tests' zone
async def test_a_job_run_lasts_what_it_lasted_when_the_clock_is_set_back(
    integration: HomeAssistant, freezer: Any
) -> None:
    async def set_back_a_month() -> JobResult:
        freezer.move_to(dt_util.utcnow() - timedelta(days=30))
        return JobResult(summary={"deleted": 0})

    job = async_register_job(integration, MadeJob("clock", set_back_a_month))
    await job.async_run("person")
    (run,) = await runs_of(integration, "clock")
    assert run["outcome"] == "ok"
    assert 0.0 <= run["duration"] < 3600.0


async def test_a_registered_job_is_listed_run_now_and_recorded(
    integration: HomeAssistant, hass_ws_client: Any
) -> None:
    async def work() -> JobResult:
        return JobResult(summary={"cleaned": 3})

    made = MadeJob("cleanup", work, dt_time(5, 30))
    async_register_job(integration, made)
    client = await hass_ws_client(integration)
    listed = await command(client, type=f"{DOMAIN}/jobs/list")
    jobs = {job["job"]: job for job in listed["result"]["jobs"]}
    assert {"cleanup", "retention"} <= set(jobs)
    assert jobs["cleanup"]["schedule"] == "05:30"
    next_run = dt_util.parse_datetime(jobs["cleanup"]["next_run"])
    assert (next_run.hour, next_run.minute) == (5, 30)
    assert timedelta(0) < next_run - dt_util.now() <= timedelta(days=1)
    assert jobs["cleanup"]["runs"] == []

    done = await command(client, type=f"{DOMAIN}/jobs/run_now", job="cleanup")
    (run,) = await runs_of(integration, "cleanup")
    assert done["result"] == {
        "run_id": run["id"],
        "outcome": "ok",
        "outcome_detail": None,
        "summary": {"cleaned": 3},
    }
    assert made.triggers == ["person"]
    # The job is told its run's id, by which its owner keys what it keeps.
    assert made.job_runs == [run["id"]]
    assert run["trigger"] == "person"
    assert run["summary"] == {"cleaned": 3}


async def test_an_outcome_is_a_kind_and_a_detail_sent_as_fields(
    integration: HomeAssistant, hass_ws_client: Any
) -> None:
    async def gave_up() -> JobResult:
        return JobResult(Outcome("failed", "invalid_output"), {"notes": 0})

    async_register_job(integration, MadeJob("giving_up", gave_up))
    client = await hass_ws_client(integration)
    done = await command(client, type=f"{DOMAIN}/jobs/run_now", job="giving_up")
    assert (done["result"]["outcome"], done["result"]["outcome_detail"]) == (
        "failed",
        "invalid_output",
    )
    listed = await command(client, type=f"{DOMAIN}/jobs/list")
    (job,) = [job for job in listed["result"]["jobs"] if job["job"] == "giving_up"]
    (run,) = job["runs"]
    assert (run["outcome"], run["outcome_detail"]) == ("failed", "invalid_output")
    described = await command(client, type=f"{DOMAIN}/panel/describe")
    assert described["result"]["run_outcomes"] == [
        "running",
        "ok",
        "skipped",
        "no_server",
        "cancelled",
        "failed",
    ]
    with pytest.raises(ValueError, match="not an outcome"):
        Outcome("failed: invalid_output")


async def test_a_failing_job_is_recorded_failed_and_its_fault_raised(
    integration: HomeAssistant,
) -> None:
    async def broken() -> JobResult:
        raise RuntimeError("the job broke")

    job = async_register_job(integration, MadeJob("broken", broken))
    with pytest.raises(RuntimeError, match="the job broke"):
        await job.async_run("schedule")
    (run,) = await runs_of(integration, "broken")
    assert (run["outcome"], run["outcome_detail"]) == ("failed", "RuntimeError")
    assert run["trigger"] == "schedule"


async def test_run_now_refuses_a_running_job_and_one_not_registered(
    integration: HomeAssistant, hass_ws_client: Any
) -> None:
    release = asyncio.Event()

    async def slow() -> JobResult:
        await release.wait()
        return JobResult()

    made_slow = MadeJob("slow", slow)
    job = async_register_job(integration, made_slow)
    running = integration.async_create_task(job.async_run("schedule"))
    await asyncio.sleep(0)
    client = await hass_ws_client(integration)
    answer = await command(client, type=f"{DOMAIN}/jobs/run_now", job="slow")
    assert answer["error"]["code"] == "in_progress"
    answer = await command(client, type=f"{DOMAIN}/jobs/run_now", job="backup")
    assert answer["error"]["code"] == "not_found"
    # Another way of running it while it runs is recorded as skipped.
    skipped = await job.async_run("action")
    assert (skipped["outcome"], skipped["outcome_detail"]) == ("skipped", "another_run")
    assert made_slow.triggers == ["schedule"]
    release.set()
    assert (await running)["outcome"] == "ok"
    assert [run["outcome"] for run in await runs_of(integration, "slow")] == [
        "skipped",
        "ok",
    ]


def make_database_a_kill_left(path: Path) -> None:
    """A database whose retention run was in progress when Home Assistant died.

    Of the schema before outcomes had a kind and a detail, so that the start
    migrates it and a lock keeps the store closed.
    """
    before = tuple(m for m in in_order(SCHEMAS) if m.version < OUTCOMES_VERSION)
    connection = connect(path, before)
    with transaction(connection):
        connection.execute(
            "INSERT INTO job_runs (job, trigger, started_at, outcome) "
            "VALUES ('retention', 'schedule', 1000.0, 'running')"
        )
    connection.close()


@pytest.mark.freeze_time("2026-11-20 20:00:00+00:00")
async def test_a_run_a_kill_left_ends_interrupted_once_a_locked_store_opens(
    hass: HomeAssistant, freezer: Any
) -> None:
    path = Path(hass.config.path(DOMAIN, DB_FILE))
    await hass.async_add_executor_job(make_database_a_kill_left, path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # a database browser holding the file
    assert await async_setup_component(hass, DOMAIN, {})
    assert not hass.data[DATA_STORE].available
    other.execute("ROLLBACK")
    other.close()
    freezer.tick(REOPEN_DELAY + 1)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert hass.data[DATA_STORE].available
    (run,) = await runs_of(hass, "retention")
    assert (run["outcome"], run["outcome_detail"]) == ("failed", "interrupted")


def test_runs_left_running_by_a_kill_are_marked(tmp_path: Path) -> None:
    connection = connect(tmp_path / "assistant.db", in_order(SCHEMAS))
    run = insert_run(connection, "retention", "schedule", {})
    interrupted_runs(connection)
    (only,) = list_runs(connection, "retention")
    assert (only["outcome"], only["outcome_detail"]) == ("failed", "interrupted")
    finish_run(connection, run, RunEnd(duration=1.0, outcome=Outcome("ok")))
    assert list_runs(connection, "retention")[0]["outcome"] == "ok"
