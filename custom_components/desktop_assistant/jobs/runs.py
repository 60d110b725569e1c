"""The runs of every registered job, recorded for the panel's Jobs page.

A job's owner runs it through the `RegisteredJob` that `async_register_job`
returned (the panel's *Run now* does too); each run becomes a row of
`job_runs` (trigger, start, duration, outcome and a summary), and the newest
KEEP_RUNS of each job are kept. A store fault while recording never stops
the job; the job's own fault is recorded and raised again to its owner. A
run whose end could not be written is ended by the next run of any job, and
a run a stop left `running` is ended at the next start (`interrupted_runs`).
"""

import asyncio
from dataclasses import dataclass, field
import json
import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Final

from homeassistant.core import HomeAssistant

from ..clock import monotonic_seconds
from ..runtime import DATA_STORE, DATA_UNRECORDED_RUNS
from ..store import Store, StoreError, transaction
from ..store.rows import keep_newest, newest_rows

if TYPE_CHECKING:
    from .registry import Job

_LOGGER = logging.getLogger(__name__)

KEEP_RUNS: Final = 50

RUNNING: Final = "running"
INTERRUPTED: Final = "failed: interrupted"
_TABLE: Final = "job_runs"
# What the panel gets of a run, by column.
_RUN_FIELDS: Final = {
    field: field
    for field in ("id", "trigger", "started_at", "duration", "outcome", "summary")
}


def insert_run(
    connection: sqlite3.Connection,
    job: str,
    trigger: str,
    unrecorded: dict[int, str] | None = None,
) -> int:
    """Start a run's row, ending first the runs whose end could not be written."""
    with transaction(connection):
        connection.executemany(
            "UPDATE job_runs SET outcome = ? WHERE id = ? AND outcome = ?",
            [(outcome, run, RUNNING) for run, outcome in (unrecorded or {}).items()],
        )
        cursor = connection.execute(
            "INSERT INTO job_runs (job, trigger, started_at, outcome) "
            "VALUES (?, ?, ?, 'running')",
            (job, trigger, time.time()),
        )
    return int(cursor.lastrowid or 0)


@dataclass
class RunEnd:
    """How a run ended: its seconds, its outcome and the summary it answered."""

    duration: float
    outcome: str
    summary: dict[str, Any] = field(default_factory=dict)


def finish_run(connection: sqlite3.Connection, run: int, job: str, end: RunEnd) -> None:
    """Record how a run ended; keep the job's newest KEEP_RUNS runs."""
    with transaction(connection):
        connection.execute(
            "UPDATE job_runs SET duration = ?, outcome = ?, summary = ? WHERE id = ?",
            (end.duration, end.outcome, json.dumps(end.summary), run),
        )
        keep_newest(connection, _TABLE, key="job", value=job, keep=KEEP_RUNS)


def adopt_runs(
    connection: sqlite3.Connection, job: str, runs: list[dict[str, Any]]
) -> dict[float, int]:
    """Add runs recorded elsewhere before, oldest first, unless already kept.

    Answer the id each run (by its start) has here, where it is still kept.
    """
    kept = _ids_by_start(connection, job)
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
    return _ids_by_start(connection, job)


def _ids_by_start(connection: sqlite3.Connection, job: str) -> dict[float, int]:
    return dict(
        connection.execute(
            "SELECT started_at, id FROM job_runs WHERE job = ?", (job,)
        ).fetchall()
    )


def interrupted_runs(connection: sqlite3.Connection) -> None:
    """Mark runs a stopped or killed Home Assistant left `running`."""
    with transaction(connection):
        connection.execute(
            "UPDATE job_runs SET outcome = ? WHERE outcome = ?",
            (INTERRUPTED, RUNNING),
        )


def list_runs(
    connection: sqlite3.Connection, job: str, limit: int = KEEP_RUNS
) -> list[dict[str, Any]]:
    """A job's runs, newest first."""
    runs = newest_rows(
        connection, _TABLE, _RUN_FIELDS, key="job", value=job, limit=limit
    )
    for run in runs:
        run["summary"] = json.loads(run["summary"])
    return runs


def get_run(
    connection: sqlite3.Connection, job: str, run: int
) -> dict[str, Any] | None:
    """One run of `job`; None when it is not kept."""
    columns = ", ".join(_RUN_FIELDS.values())
    row = connection.execute(
        f"SELECT {columns} FROM job_runs WHERE job = ? AND id = ?", (job, run)
    ).fetchone()
    if row is None:
        return None
    found = dict(zip(_RUN_FIELDS, row, strict=True))
    return found | {"summary": json.loads(found["summary"])}


def last_start(
    connection: sqlite3.Connection, job: str, ignoring: tuple[str, ...]
) -> float | None:
    """When the job's last run started, leaving out runs that ended `ignoring`."""
    marks = ", ".join("?" * len(ignoring))
    row = connection.execute(
        f"SELECT max(started_at) FROM job_runs WHERE job = ? "
        f"AND outcome NOT IN ({marks})",
        (job, *ignoring),
    ).fetchone()
    return row[0]


async def async_run_recorded(
    hass: HomeAssistant, job: Job, trigger: str
) -> dict[str, Any]:
    """Run `job` as a recorded run; answer what it answered."""
    store = hass.data[DATA_STORE]
    unrecorded = hass.data.setdefault(DATA_UNRECORDED_RUNS, {})
    started = monotonic_seconds()
    run: int | None = None
    outcome, summary = "cancelled", {}
    ending = dict(unrecorded)
    try:
        run = await store.async_run(
            lambda db: insert_run(db, job.name, trigger, ending)
        )
        for ended in ending:
            unrecorded.pop(ended, None)
    except StoreError:
        _LOGGER.debug("The %s run is not recorded", job.name)
    try:
        answer = await job.async_run(trigger, run)
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
            end = RunEnd(monotonic_seconds() - started, outcome, summary)
            await _async_finish(store, unrecorded, run, job.name, end)
    return answer


async def _async_finish(
    store: Store, unrecorded: dict[int, str], run: int, job: str, end: RunEnd
) -> None:
    """Write how the run ended, even while its task is being cancelled."""
    try:
        await asyncio.shield(store.async_run(lambda db: finish_run(db, run, job, end)))
    except StoreError as err:
        # Reported by the store; the next run writes how this one ended.
        unrecorded[run] = f"failed: database {err.kind}"
