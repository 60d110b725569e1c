"""Runs of scheduled work other than the nightly pass, recorded for the panel.

A job's owner runs it through `async_run_job` (the record's retention does);
each run becomes a row of `job_runs` (trigger, start, duration, outcome and a
summary), and the newest KEEP_RUNS of each job are kept. A store fault
while recording never stops the job; the job's own fault is recorded and
raised again to its owner.
"""

import asyncio
from collections.abc import Awaitable, Callable
import json
import logging
import sqlite3
import time
from typing import Any, Final

from homeassistant.core import HomeAssistant

from ..clock import monotonic_seconds
from ..runtime import DATA_RUNNING_JOBS, DATA_STORE
from ..store import StoreError, transaction
from ..store.rows import keep_newest, newest_rows

_LOGGER = logging.getLogger(__name__)

JOB_RETENTION: Final = "retention"
KEEP_RUNS: Final = 50

_TABLE: Final = "job_runs"
# What the panel gets of a run, by column.
_RUN_FIELDS: Final = {
    field: field
    for field in ("trigger", "started_at", "duration", "outcome", "summary")
}


def insert_run(connection: sqlite3.Connection, job: str, trigger: str) -> int:
    """Start a run's row; return its id."""
    with transaction(connection):
        cursor = connection.execute(
            "INSERT INTO job_runs (job, trigger, started_at, outcome) "
            "VALUES (?, ?, ?, 'running')",
            (job, trigger, time.time()),
        )
    return int(cursor.lastrowid or 0)


def finish_run(
    connection: sqlite3.Connection,
    run: int,
    job: str,
    *,
    duration: float,
    outcome: str,
    summary: dict[str, Any],
) -> None:
    """Record how a run ended; keep the job's newest KEEP_RUNS runs."""
    with transaction(connection):
        connection.execute(
            "UPDATE job_runs SET duration = ?, outcome = ?, summary = ? WHERE id = ?",
            (duration, outcome, json.dumps(summary), run),
        )
        keep_newest(connection, _TABLE, key="job", value=job, keep=KEEP_RUNS)


def interrupted_runs(connection: sqlite3.Connection) -> None:
    """Mark runs a stopped or killed Home Assistant left `running`."""
    with transaction(connection):
        connection.execute(
            "UPDATE job_runs SET outcome = 'failed: interrupted' "
            "WHERE outcome = 'running'"
        )


def list_runs(connection: sqlite3.Connection, job: str) -> list[dict[str, Any]]:
    """A job's runs, newest first."""
    runs = newest_rows(
        connection, _TABLE, _RUN_FIELDS, key="job", value=job, limit=KEEP_RUNS
    )
    for run in runs:
        run["summary"] = json.loads(run["summary"])
    return runs


def is_running(hass: HomeAssistant, job: str) -> bool:
    """Whether a run of the job is in progress."""
    return job in hass.data.get(DATA_RUNNING_JOBS, set())


async def async_run_job[T](
    hass: HomeAssistant,
    job: str,
    trigger: str,
    work: Callable[[], Awaitable[T]],
    summarize: Callable[[T], dict[str, Any]],
) -> T:
    """Run `work` as a recorded run of `job`; return what it returns."""
    store = hass.data[DATA_STORE]
    running = hass.data.setdefault(DATA_RUNNING_JOBS, set())
    running.add(job)
    started = monotonic_seconds()
    run: int | None = None
    outcome, summary = "cancelled", {}
    try:
        run = await store.async_run(lambda db: insert_run(db, job, trigger))
    except StoreError:
        _LOGGER.debug("The %s run is not recorded", job)
    try:
        result = await work()
        outcome, summary = "ok", summarize(result)
    except StoreError as err:
        outcome = f"failed: database {err.kind}"
        raise
    except Exception as err:
        outcome = f"failed: {type(err).__name__}"
        raise
    finally:
        running.discard(job)
        if run is not None:
            duration = monotonic_seconds() - started
            try:
                await asyncio.shield(
                    store.async_run(
                        lambda db: finish_run(
                            db,
                            run,
                            job,
                            duration=duration,
                            outcome=outcome,
                            summary=summary,
                        )
                    )
                )
            except StoreError:
                _LOGGER.debug("The end of the %s run is not recorded", job)
    return result
