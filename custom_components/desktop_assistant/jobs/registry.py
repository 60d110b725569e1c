"""The registered jobs, by name, and the recorded way to run one."""

from dataclasses import dataclass
from datetime import time as dt_time
from typing import Any, Protocol

from homeassistant.core import HomeAssistant, callback

from ..runtime import DATA_JOBS, DATA_STORE
from .runs import adopt_runs, async_run_recorded, get_run, last_start, list_runs


class Job(Protocol):
    """A piece of scheduled work, as its owner describes it."""

    @property
    def name(self) -> str:
        """What the job is called (the panel's text key)."""

    @property
    def schedule(self) -> dt_time | None:
        """The time of day it runs daily; None when it is off."""

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""

    async def async_run(self, trigger: str, job_run: int | None) -> dict[str, Any]:
        """Run once; answer the run's `outcome` (`ok` if left out) and `summary`.

        `job_run` is the run's id in the registry (None when the store could
        not record it): an owner that keeps more of a run keys it by that.

        The registry keeps the summary, or `recorded_summary` when the answer
        has one: a summary that quotes what the owner can delete forever
        gives the registry one without it, as the registry keeps runs apart.
        """


@dataclass(frozen=True, slots=True)
class RegisteredJob:
    """What the owner of a registered job runs it through."""

    hass: HomeAssistant
    job: Job

    async def async_run(self, trigger: str) -> dict[str, Any]:
        """Run the job as a recorded run; answer what it answered."""
        return await async_run_recorded(self.hass, self.job, trigger)

    async def async_adopt_runs(self, runs: list[dict[str, Any]]) -> dict[float, int]:
        """Take over runs the owner recorded before the jobs kept them.

        Each a mapping of `trigger`, `started_at`, `duration`, `outcome` and
        `summary`; a run already kept (by its start) is not added again.
        Answer each kept run's id, by its start.
        """
        return await self.hass.data[DATA_STORE].async_run(
            lambda db: adopt_runs(db, self.job.name, runs)
        )

    async def async_runs(self, limit: int) -> list[dict[str, Any]]:
        """The job's last `limit` runs, newest first, each with its `id`."""
        return await self.hass.data[DATA_STORE].async_run(
            lambda db: list_runs(db, self.job.name, limit)
        )

    async def async_get_run(self, job_run: int) -> dict[str, Any] | None:
        """One run of the job, by its id; None when it is no longer kept."""
        return await self.hass.data[DATA_STORE].async_run(
            lambda db: get_run(db, self.job.name, job_run)
        )

    async def async_last_start(self, ignoring: tuple[str, ...]) -> float | None:
        """When the last run started, leaving out those whose outcome is `ignoring`."""
        return await self.hass.data[DATA_STORE].async_run(
            lambda db: last_start(db, self.job.name, ignoring)
        )


@callback
def async_register_job(hass: HomeAssistant, job: Job) -> RegisteredJob:
    """Add `job` to the Jobs page; run it through what this returns to record it."""
    hass.data.setdefault(DATA_JOBS, {})[job.name] = job
    return RegisteredJob(hass, job)


def registered_jobs(hass: HomeAssistant) -> dict[str, Job]:
    """The registered jobs, by name."""
    return hass.data.get(DATA_JOBS, {})
