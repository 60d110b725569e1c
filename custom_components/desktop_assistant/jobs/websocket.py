"""Websocket commands (admin only) of the panel's Jobs page.

Each registered job: its schedule, next run, whether it runs now, its last
50 runs, and *Run now*, the one command that runs any job (the Nightly page
uses it too). Errors: `in_progress` (it runs already), `not_found` (no such
job: memory's nightly pass is registered only while memory is on),
`unavailable` (the database failed).
"""

from datetime import datetime
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
from homeassistant.util import dt as dt_util
import probatio as vol

from ..const import DOMAIN
from ..websocket_commands import ERR_IN_PROGRESS, Refused, admin_command
from .registry import RegisteredJob, registered_jobs
from .runs import KEEP_RUNS
from .timer import next_daily

PREFIX: Final = f"{DOMAIN}/jobs"


async def described(registered: RegisteredJob, now: datetime) -> dict[str, Any]:
    """A job as the Jobs page shows it."""
    at = registered.job.schedule
    return {
        "job": registered.job.name,
        "schedule": at.isoformat("minutes") if at else None,
        "next_run": next_daily(at, now).isoformat() if at else None,
        "running": registered.running,
        "runs": await registered.async_runs(KEEP_RUNS),
    }


@admin_command({vol.Required("type"): f"{PREFIX}/list"})
async def websocket_list_jobs(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Every registered job with its next run and last runs."""
    now = dt_util.now()
    return {
        "jobs": [
            await described(registered, now)
            for registered in registered_jobs(hass).values()
        ]
    }


@admin_command({vol.Required("type"): f"{PREFIX}/run_now", vol.Required("job"): str})
async def websocket_run_job(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Run a job now and answer when it ended."""
    if (registered := registered_jobs(hass).get(msg["job"])) is None:
        raise Refused(websocket_api.ERR_NOT_FOUND, f"There is no job {msg['job']}")
    if registered.running:
        raise Refused(ERR_IN_PROGRESS, f"The {msg['job']} job is running")
    return await registered.async_run("person")


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the Jobs page's commands."""
    websocket_api.async_register_command(hass, websocket_list_jobs)
    websocket_api.async_register_command(hass, websocket_run_job)
