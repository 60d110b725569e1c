"""The registered jobs, by name: each one's timer, its runs, its one "run now"."""

from dataclasses import dataclass, field
from datetime import time as dt_time
from typing import Any, Protocol

from homeassistant.core import HomeAssistant, callback

from ..runtime import DATA_JOBS, DATA_RUNNING_JOBS, DATA_STORE
from .outcome import SUCCEEDED, Outcome
from .recorded import async_run_recorded
from .runs import failures_in_a_row, get_run, kept_runs, list_runs
from .timer import DailyTimer


@dataclass(frozen=True, slots=True)
class JobResult:
    """What one run did: how it ended and a summary (counts, never quotes)."""

    outcome: Outcome = SUCCEEDED
    summary: dict[str, Any] = field(default_factory=dict)


class Job(Protocol):
    """A piece of scheduled work, as its owner describes it."""

    @property
    def name(self) -> str:
        """What the job is called (the panel's text key)."""

    @property
    def schedule(self) -> dt_time | None:
        """The time of day it runs daily; None when it is off."""

    async def async_run(self, trigger: str, job_run: int) -> JobResult:
        """Run once, as the run `job_run` of the registry.

        An owner that keeps more of a run keys it by `job_run`.
        """


class RegisteredJob:
    """A job the registry times and records; its owner reads its runs here."""

    def __init__(self, hass: HomeAssistant, job: Job) -> None:
        """Register `job`; `DailyTimer` runs it at its time."""
        self.hass = hass
        self.job = job
        self.timer = DailyTimer(hass, job.name, lambda: job.schedule, self.async_run)

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        return self.job.name in self.hass.data.get(DATA_RUNNING_JOBS, set())

    async def async_run(self, trigger: str) -> dict[str, Any]:
        """Run the job now as a recorded run: its `run_id`, outcome and summary."""
        return await async_run_recorded(self.hass, self.job, trigger)

    @callback
    def async_schedule_changed(self) -> None:
        """Time the job again by its `schedule`, which changed."""
        self.timer.async_start()

    async def async_runs(self, limit: int) -> list[dict[str, Any]]:
        """The job's last `limit` runs, newest first, each with its `id`."""
        return await self._async_read(lambda db: list_runs(db, self.job.name, limit))

    async def async_get_run(self, job_run: int) -> dict[str, Any] | None:
        """One run of the job, by its id; None when it is no longer kept."""
        return await self._async_read(lambda db: get_run(db, self.job.name, job_run))

    async def async_kept_runs(self) -> list[int]:
        """The ids of the runs still kept (an owner forgets what it kept of others)."""
        return await self._async_read(lambda db: kept_runs(db, self.job.name))

    async def async_failures_in_a_row(self) -> int:
        """How many of the last ended runs failed, skipped runs left out."""
        return await self._async_read(lambda db: failures_in_a_row(db, self.job.name))

    async def _async_read(self, read: Any) -> Any:
        return await self.hass.data[DATA_STORE].async_run(read)


@callback
def async_register_job(hass: HomeAssistant, job: Job) -> RegisteredJob:
    """Add `job` to the Jobs page and time it; it replaces one of the same name."""
    jobs = hass.data.setdefault(DATA_JOBS, {})
    if (earlier := jobs.get(job.name)) is not None:
        earlier.timer.async_stop()
    jobs[job.name] = registered = RegisteredJob(hass, job)
    registered.timer.async_start()
    return registered


def registered_jobs(hass: HomeAssistant) -> dict[str, RegisteredJob]:
    """The registered jobs, by name."""
    return hass.data.get(DATA_JOBS, {})


@callback
def async_stop_timers(hass: HomeAssistant) -> None:
    """Stop every job's timer (Home Assistant stops)."""
    for registered in registered_jobs(hass).values():
        registered.timer.async_stop()
