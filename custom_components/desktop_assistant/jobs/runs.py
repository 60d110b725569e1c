"""The runs of every registered job, recorded for the panel's Jobs page.

A job's owner runs it through the `RegisteredJob` that `async_register_job`
returned (the panel's *Run now* does too); each run becomes a row of `job_runs` (trigger, start, duration, outcome and a
summary), and the newest KEEP_RUNS of each job are kept. A store fault
while recording never stops the job; the job's own fault is recorded and
raised again to its owner.
"""

import asyncio
import json
import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Final

from homeassistant.core import HomeAssistant

from ..clock import monotonic_seconds
from ..runtime import DATA_STORE
from ..store import Store, StoreError, transaction
from ..store.rows import keep_newest, newest_rows

if TYPE_CHECKING:
    from .registry import Job

_LOGGER = logging.getLogger(__name__)

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


def adopt_runs(
    connection: sqlite3.Connection, job: str, runs: list[dict[str, Any]]
) -> int:
    """Add runs recorded elsewhere before, oldest first, unless already kept."""
    kept = {
        row[0]
        for row in connection.execute(
            "SELECT started_at FROM job_runs WHERE job = ?", (job,)
        )
    }
    new = sorted(
        (run for run in runs if run["started_at"] not in kept),
        key=lambda run: run["started_at"],
    )
    with transaction(connection):
        connection.executemany(
            "INSERT INTO job_runs (job, trigger, started_at, duration, outcome, "
            "summary) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    job,
                    run["trigger"],
                    run["started_at"],
                    run["duration"],
                    run["outcome"],
                    json.dumps(run["summary"]),
                )
                for run in new
            ],
        )
        keep_newest(connection, _TABLE, key="job", value=job, keep=KEEP_RUNS)
    return len(new)


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


async def async_run_recorded(
    hass: HomeAssistant, job: Job, trigger: str
) -> dict[str, Any]:
    """Run `job` as a recorded run; answer what it answered."""
    store = hass.data[DATA_STORE]
    started = monotonic_seconds()
    run: int | None = None
    outcome, summary = "cancelled", {}
    try:
        run = await store.async_run(lambda db: insert_run(db, job.name, trigger))
    except StoreError:
        _LOGGER.debug("The %s run is not recorded", job.name)
    try:
        answer = await job.async_run(trigger)
        outcome = answer.get("outcome", "ok")
        summary = answer.pop("recorded_summary", answer.get("summary", {}))
    except StoreError as err:
        outcome = f"failed: database {err.kind}"
        raise
    except Exception as err:
        outcome = f"failed: {type(err).__name__}"
        raise
    finally:
        if run is not None:
            duration = monotonic_seconds() - started
            await _async_finish(
                store,
                run,
                job.name,
                duration=duration,
                outcome=outcome,
                summary=summary,
            )
    return answer


async def _async_finish(
    store: Store,
    run: int,
    job: str,
    *,
    duration: float,
    outcome: str,
    summary: dict[str, Any],
) -> None:
    """Write how the run ended, even while its task is being cancelled."""
    try:
        await asyncio.shield(
            store.async_run(
                lambda db: finish_run(
                    db, run, job, duration=duration, outcome=outcome, summary=summary
                )
            )
        )
    except StoreError:
        _LOGGER.debug("The end of the %s run is not recorded", job)
