"""Scheduled work: a registry of jobs, one table of their runs, the Jobs page.

A feature registers each of its jobs with `async_register_job` (the record
its retention, memory its nightly pass) and runs it on its own schedule
through the `RegisteredJob` that returns, so that every run is a row of
`job_runs`. `jobs/` imports no feature: it knows a job only as a `Job`.
`async_setup_jobs` registers the Jobs page's commands and ends the runs a
stop interrupted (`async_end_interrupted`, again when a store that was
closed opens). This is the one sweeper of interrupted runs: a feature keeps
no outcome of its own.
"""

import contextlib

from homeassistant.core import HomeAssistant

from ..store import Store, StoreError
from .registry import Job, RegisteredJob, async_register_job
from .runs import interrupted_runs
from .schema import SCHEMA
from .websocket import async_register_commands

__all__ = [
    "SCHEMA",
    "Job",
    "RegisteredJob",
    "async_end_interrupted",
    "async_register_job",
    "async_setup_jobs",
]


async def async_setup_jobs(hass: HomeAssistant, store: Store) -> None:
    """The Jobs page's commands; runs left `running` by a stop end `interrupted`."""
    async_register_commands(hass)
    await async_end_interrupted(store)


async def async_end_interrupted(store: Store) -> None:
    """End the runs a stopped or killed Home Assistant left `running`."""
    if store.available:
        # A fault is reported by the store.
        with contextlib.suppress(StoreError):
            await store.async_run(interrupted_runs)
