"""Scheduled work: the registry of jobs, their timers, one table of their runs.

A feature registers each of its jobs with `async_register_job` (the record
its retention, memory its nightly pass): the registry times it daily at the
job's declared `schedule` (and catches up a run missed while Home Assistant
was down), hands each run its id in `job_runs` before it starts, and is the
one way to run it now (the Jobs page's *Run now*, a feature's action). Every
run's trigger, times, outcome (`outcome.py`: a kind and a detail) and
summary are one row of `job_runs`; an owner keys what more it keeps of a run
by that row's id. `jobs/` imports no feature: it knows a job only as a
`Job`. `async_setup_jobs` registers the Jobs page's commands, stops the
timers when Home Assistant stops, and ends the runs a stop interrupted
(`async_end_interrupted`, again when a store that was closed opens).
"""

import contextlib

from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import Event, HomeAssistant, callback

from ..store import Store, StoreError
from .outcome import KINDS, Outcome
from .registry import (
    Job,
    JobResult,
    RegisteredJob,
    async_register_job,
    async_stop_timers,
)
from .runs import interrupted_runs
from .schema import SCHEMA
from .websocket import async_register_commands

__all__ = [
    "KINDS",
    "SCHEMA",
    "Job",
    "JobResult",
    "Outcome",
    "RegisteredJob",
    "async_end_interrupted",
    "async_register_job",
    "async_setup_jobs",
]


async def async_setup_jobs(hass: HomeAssistant, store: Store) -> None:
    """The Jobs page's commands; runs left `running` by a stop end `interrupted`."""
    async_register_commands(hass)

    @callback
    def stop(event: Event) -> None:
        async_stop_timers(hass)

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, stop)
    await async_end_interrupted(store)


async def async_end_interrupted(store: Store) -> None:
    """End the runs a stopped or killed Home Assistant left `running`."""
    if store.available:
        # A fault is reported by the store.
        with contextlib.suppress(StoreError):
            await store.async_run(interrupted_runs)
