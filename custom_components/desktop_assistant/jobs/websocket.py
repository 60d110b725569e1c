"""Websocket commands (admin only) of the panel's Jobs page.

Each registered job: its schedule, next run, whether it runs now, its last
50 runs, and *Run now*. Errors: `in_progress` (it runs already),
`not_found` (no such job: memory's nightly pass is registered only while
memory is on), `unavailable` (the database failed).
"""

from datetime import datetime, time as dt_time, timedelta
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
from homeassistant.util import dt as dt_util
import probatio as vol

from ..const import DOMAIN
from ..runtime import DATA_STORE
from ..websocket_commands import ERR_IN_PROGRESS, Refused, admin_command
from .registry import Job, registered_jobs
from .runs import async_run_recorded, list_runs

PREFIX: Final = f"{DOMAIN}/jobs"


def next_daily(at: dt_time, now: datetime) -> datetime:
    """The next time of day `at` after `now`, in `now`'s time zone."""
    scheduled = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
    return scheduled if scheduled > now else scheduled + timedelta(days=1)


async def described(hass: HomeAssistant, job: Job, now: datetime) -> dict[str, Any]:
    """A job as the Jobs page shows it."""
    at = job.schedule
    return {
        "job": job.name,
        "schedule": at.isoformat("minutes") if at else None,
        "next_run": next_daily(at, now).isoformat() if at else None,
        "running": job.running,
        "runs": await hass.data[DATA_STORE].async_run(
            lambda db: list_runs(db, job.name)
        ),
    }


@admin_command({vol.Required("type"): f"{PREFIX}/list"})
async def websocket_list_jobs(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Every registered job with its next run and last runs."""
    now = dt_util.now()
    return {
        "jobs": [
            await described(hass, job, now) for job in registered_jobs(hass).values()
        ]
    }


@admin_command({vol.Required("type"): f"{PREFIX}/run_now", vol.Required("job"): str})
async def websocket_run_job(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Run a job now and answer when it ended."""
    if (job := registered_jobs(hass).get(msg["job"])) is None:
        raise Refused(websocket_api.ERR_NOT_FOUND, f"There is no job {msg['job']}")
    if job.running:
        raise Refused(ERR_IN_PROGRESS, f"The {job.name} job is running")
    return await async_run_recorded(hass, job, "person")


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the Jobs page's commands."""
    websocket_api.async_register_command(hass, websocket_list_jobs)
    websocket_api.async_register_command(hass, websocket_run_job)
