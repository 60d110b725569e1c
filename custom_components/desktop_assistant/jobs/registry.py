"""The registered jobs, by name, and the recorded way to run one."""

from dataclasses import dataclass
from datetime import time as dt_time
from typing import Any, Protocol

from homeassistant.core import HomeAssistant, callback

from ..runtime import DATA_JOBS, DATA_STORE
from .runs import adopt_runs, async_run_recorded


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

    async def async_run(self, trigger: str) -> dict[str, Any]:
        """Run once; answer the run's `outcome` (`ok` if left out) and `summary`.

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

    async def async_adopt_runs(self, runs: list[dict[str, Any]]) -> int:
        """Take over runs the owner recorded before the jobs kept them; how many.

        Each a mapping of `trigger`, `started_at`, `duration`, `outcome` and
        `summary`; a run already kept (by its start) is not added again.
        """
        return await self.hass.data[DATA_STORE].async_run(
            lambda db: adopt_runs(db, self.job.name, runs)
        )


@callback
def async_register_job(hass: HomeAssistant, job: Job) -> RegisteredJob:
    """Add `job` to the Jobs page; run it through what this returns to record it."""
    hass.data.setdefault(DATA_JOBS, {})[job.name] = job
    return RegisteredJob(hass, job)


def registered_jobs(hass: HomeAssistant) -> dict[str, Job]:
    """The registered jobs, by name."""
    return hass.data.get(DATA_JOBS, {})
