"""One run of a job, recorded: its row first, then the job, then its end.

A run's row is written before the job starts, so the job is told its id;
when the store cannot take it, the run does not start and the store's
fault is raised (the store has reported it). A job asked to run while it
runs is recorded `skipped` and not run again. The job's own fault is
recorded `failed` and raised again; an end the store refused is written by
the next run of any job.
"""

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from homeassistant.core import HomeAssistant

from ..clock import monotonic_seconds
from ..runtime import DATA_RUNNING_JOBS, DATA_STORE, DATA_UNRECORDED_RUNS
from ..store import StoreError
from .outcome import ANOTHER_RUN, CANCELLED, Outcome, database_failed, failed
from .runs import RunEnd, finish_run, insert_run

if TYPE_CHECKING:
    from .registry import Job

_LOGGER = logging.getLogger(__name__)


async def async_run_recorded(
    hass: HomeAssistant, job: Job, trigger: str
) -> dict[str, Any]:
    """Run `job` as a recorded run; answer its id, outcome and summary."""
    store = hass.data[DATA_STORE]
    unrecorded = hass.data.setdefault(DATA_UNRECORDED_RUNS, {})
    running = hass.data.setdefault(DATA_RUNNING_JOBS, set())
    ending = dict(unrecorded)
    if job.name in running:
        end = RunEnd(0.0, ANOTHER_RUN)
        run = await store.async_run(
            lambda db: insert_run(db, job.name, trigger, ending, end)
        )
        _forget(unrecorded, ending)
        return _answer(run, end)
    running.add(job.name)
    try:
        run = await store.async_run(
            lambda db: insert_run(db, job.name, trigger, ending)
        )
        _forget(unrecorded, ending)
        return _answer(run, await _async_run_job(hass, job, trigger, run))
    finally:
        running.discard(job.name)


def _forget(unrecorded: dict[int, Outcome], ended: dict[int, Outcome]) -> None:
    """The runs whose end a new row wrote wait for it no longer."""
    for run in ended:
        unrecorded.pop(run, None)


async def _async_run_job(
    hass: HomeAssistant, job: Job, trigger: str, run: int
) -> RunEnd:
    """Run the job under its row `run`; write how it ended, whatever happens."""
    started = monotonic_seconds()
    end = RunEnd(0.0, Outcome(CANCELLED))
    try:
        result = await job.async_run(trigger, run)
        end = RunEnd(0.0, result.outcome, result.summary)
    except StoreError as err:
        end.outcome = database_failed(err)
        raise
    except Exception as err:
        end.outcome = failed(type(err).__name__)
        raise
    finally:
        end.duration = monotonic_seconds() - started
        await _async_finish(hass, run, end)
    return end


def _answer(run: int, end: RunEnd) -> dict[str, Any]:
    return {"run_id": run, **end.outcome.fields(), "summary": end.summary}


async def _async_finish(hass: HomeAssistant, run: int, end: RunEnd) -> None:
    """Write how the run ended, even while its task is being cancelled."""
    store = hass.data[DATA_STORE]
    try:
        await asyncio.shield(store.async_run(lambda db: finish_run(db, run, end)))
    except StoreError as err:
        # Reported by the store; the next run writes how this one ended.
        _LOGGER.debug("The end of job run %s is written by the next run", run)
        hass.data[DATA_UNRECORDED_RUNS][run] = database_failed(err)
