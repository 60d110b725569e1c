"""The jobs registry: what a feature registers is listed, run and recorded.

Jobs made here are real `Job`s registered in the integration, set up in
HA's harness; the Jobs page's commands go through HA's websocket API.
"""

import asyncio
from datetime import time as dt_time, timedelta
import json
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
from custom_components.desktop_assistant.jobs import async_register_job
from custom_components.desktop_assistant.jobs.runs import adopt_runs, list_runs
from custom_components.desktop_assistant.memory.nightly import runs as nightly_runs
from custom_components.desktop_assistant.runtime import DATA_STORE
from custom_components.desktop_assistant.store import DB_FILE, in_order, transaction
from custom_components.desktop_assistant.store.store import REOPEN_DELAY, connect

# Memory's migration that handed the nightly runs' outcomes to the jobs.
NIGHTLY_RUNS_VERSION = 8
REFUSAL = "Anouk's birthday was lost"


class MadeJob:
    """A job whose run does what the test hands it."""

    def __init__(self, name: str, work: Any, schedule: dt_time | None = None) -> None:
        self.name = name
        self.schedule = schedule
        self.running = False
        self.work = work
        self.triggers: list[str] = []
        self.job_runs: list[int | None] = []

    async def async_run(self, trigger: str, job_run: int | None) -> dict[str, Any]:
        self.triggers.append(trigger)
        self.job_runs.append(job_run)
        self.running = True
        try:
            return await self.work()
        finally:
            self.running = False


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
    async def set_back_a_month() -> dict[str, Any]:
        freezer.move_to(dt_util.utcnow() - timedelta(days=30))
        return {"summary": {"deleted": 0}}

    job = async_register_job(integration, MadeJob("clock", set_back_a_month))
    await job.async_run("person")
    (run,) = await runs_of(integration, "clock")
    assert run["outcome"] == "ok"
    assert 0.0 <= run["duration"] < 3600.0


async def test_a_registered_job_is_listed_run_now_and_recorded(
    integration: HomeAssistant, hass_ws_client: Any
) -> None:
    async def work() -> dict[str, Any]:
        return {"outcome": "ok", "summary": {"cleaned": 3}}

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
    assert done["result"] == {"outcome": "ok", "summary": {"cleaned": 3}}
    assert made.triggers == ["person"]
    (run,) = await runs_of(integration, "cleanup")
    # The job is told its run's id, by which its owner keys what it keeps.
    assert made.job_runs == [run["id"]]
    assert run["trigger"] == "person"
    assert run["summary"] == {"cleaned": 3}


async def test_a_summary_that_quotes_is_recorded_without_the_quotes(
    integration: HomeAssistant,
) -> None:
    quoted = {"notes": 1, "refusals": ["Anouk's birthday was lost"]}

    async def work() -> dict[str, Any]:
        return {"summary": quoted, "recorded_summary": {"notes": 1}}

    job = async_register_job(integration, MadeJob("quoting", work))
    assert await job.async_run("action") == {"summary": quoted}
    (run,) = await runs_of(integration, "quoting")
    assert run["summary"] == {"notes": 1}


async def test_a_failing_job_is_recorded_failed_and_its_fault_raised(
    integration: HomeAssistant,
) -> None:
    async def broken() -> dict[str, Any]:
        raise RuntimeError("the job broke")

    job = async_register_job(integration, MadeJob("broken", broken))
    with pytest.raises(RuntimeError, match="the job broke"):
        await job.async_run("schedule")
    (run,) = await runs_of(integration, "broken")
    assert run["outcome"] == "failed: RuntimeError"
    assert run["trigger"] == "schedule"


async def test_run_now_refuses_a_running_job_and_one_not_registered(
    integration: HomeAssistant, hass_ws_client: Any
) -> None:
    release = asyncio.Event()

    async def slow() -> dict[str, Any]:
        await release.wait()
        return {"summary": {}}

    job = async_register_job(integration, MadeJob("slow", slow))
    running = integration.async_create_task(job.async_run("schedule"))
    await asyncio.sleep(0)
    client = await hass_ws_client(integration)
    answer = await command(client, type=f"{DOMAIN}/jobs/run_now", job="slow")
    assert answer["error"]["code"] == "in_progress"
    answer = await command(client, type=f"{DOMAIN}/jobs/run_now", job="backup")
    assert answer["error"]["code"] == "not_found"
    release.set()
    assert await running == {"summary": {}}
    assert [run["outcome"] for run in await runs_of(integration, "slow")] == ["ok"]


def test_runs_handed_over_twice_are_kept_once(tmp_path: Path) -> None:
    connection = connect(tmp_path / "assistant.db", in_order(SCHEMAS))
    earlier = [
        {
            "trigger": "schedule",
            "started_at": 1000.0 + day,
            "duration": 2.0,
            "outcome": "ok",
            "summary": {"notes": day},
        }
        for day in range(3)
    ]
    first = adopt_runs(connection, "nightly", earlier)
    assert sorted(first) == [1000.0, 1001.0, 1002.0]
    assert adopt_runs(connection, "nightly", earlier) == first
    kept = list_runs(connection, "nightly")
    connection.close()
    assert [run["summary"]["notes"] for run in kept] == [2, 1, 0]
    assert [run["id"] for run in kept] == [first[1002.0], first[1001.0], first[1000.0]]


ANOUK_TEXT = "Sara's sister.\n"


def make_database_with_nightly_runs(path: Path) -> None:
    """A database whose nightly runs were kept by memory alone, as before the jobs.

    Its first run created a page, which revert can still delete.
    """
    before = tuple(m for m in in_order(SCHEMAS) if m.version < NIGHTLY_RUNS_VERSION)
    connection = connect(path, before)
    with transaction(connection):
        # As that schema's code wrote a page (no owner then).
        (page_id,) = connection.execute(
            "INSERT INTO pages (name, kind, text, created_at, updated_at, revision)"
            " VALUES ('Anouk', 'person', ?, 900.0, 900.0, 1) RETURNING id",
            (ANOUK_TEXT,),
        ).fetchone()
        connection.execute(
            "INSERT INTO page_names VALUES ('anouk', ?, 'Anouk', 0)", (page_id,)
        )
        connection.execute(
            "INSERT INTO page_revisions (id, page, at, author, name, kind, aliases,"
            " text) VALUES (1, ?, 900.0, 'nightly', 'Anouk', 'person', '[]', ?)",
            (page_id, ANOUK_TEXT),
        )
        for day, outcome in enumerate(("ok", "no_server")):
            connection.execute(
                "INSERT INTO nightly_runs (trigger, started_at, duration, outcome, "
                "summary) VALUES ('schedule', ?, 5.0, ?, ?)",
                (
                    1000.0 + day,
                    outcome,
                    json.dumps({"notes": day, "refusals": [REFUSAL]}),
                ),
            )
        nightly_runs.record_change(
            connection,
            1,
            nightly_runs.PageChange(
                page_id, "Anouk", "create", None, ANOUK_TEXT, None, 1
            ),
        )
    connection.close()


async def test_nightly_runs_kept_before_the_jobs_show_on_the_jobs_page(
    hass: HomeAssistant, hass_ws_client: Any
) -> None:
    path = Path(hass.config.path(DOMAIN, DB_FILE))
    await hass.async_add_executor_job(make_database_with_nightly_runs, path)
    assert await async_setup_component(hass, DOMAIN, {})
    client = await hass_ws_client(hass)
    listed = await command(client, type=f"{DOMAIN}/jobs/list")
    (nightly,) = [job for job in listed["result"]["jobs"] if job["job"] == "nightly"]
    assert [(run["outcome"], run["summary"]) for run in nightly["runs"]] == [
        ("no_server", {"notes": 1}),
        ("ok", {"notes": 0}),
    ]
    assert nightly["runs"][0]["started_at"] == 1001.0

    # The Nightly page lists them too, and still reverts what they changed.
    listed = await command(client, type=f"{DOMAIN}/memory/runs/list")
    first = listed["result"]["runs"][-1]
    assert (first["outcome"], first["started_at"]) == ("ok", 1000.0)
    run = await command(
        client, type=f"{DOMAIN}/memory/runs/get", run_id=first["run_id"]
    )
    (change,) = run["result"]["pages"]
    assert run["result"]["detail"]["refusals"] == [REFUSAL]
    reverted = await command(
        client,
        type=f"{DOMAIN}/memory/runs/revert",
        run_id=first["run_id"],
        page_id=change["page_id"],
    )
    assert reverted["result"] == {"page_id": change["page_id"], "reverted": "deleted"}


def make_database_a_kill_left(path: Path) -> None:
    """A database whose retention run was in progress when Home Assistant died.

    Of the schema before memory's runs moved, so that the start migrates it
    and a lock keeps the store closed.
    """
    before = tuple(m for m in in_order(SCHEMAS) if m.version < NIGHTLY_RUNS_VERSION)
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
    assert run["outcome"] == "failed: interrupted"
