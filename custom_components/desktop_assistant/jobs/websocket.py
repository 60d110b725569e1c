"""Websocket commands (admin only) of the panel's Jobs page.

Each scheduled job: its schedule, next run, whether it runs now, its last 50
runs, and *Run now*. The nightly pass keeps its own runs (memory's); the
record's retention is recorded through `jobs.async_run_job`. Errors:
`in_progress` (it runs already), `not_found` (no such job, or memory is off),
`unavailable` (the database failed).
"""

from datetime import datetime, time as dt_time, timedelta
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
from homeassistant.util import dt as dt_util
import probatio as vol

from ..const import DOMAIN
from ..memory.nightly import runs as nightly_runs
from ..memory.nightly.schedule import nightly_time, schedule_entry
from ..record.conversation_record import RETENTION_HOUR
from ..runtime import DATA_MEMORY, DATA_NIGHTLY, DATA_RECORD, DATA_STORE
from ..websocket_commands import ERR_IN_PROGRESS, Refused, admin_command
from .runs import JOB_RETENTION, async_run_job, is_running, list_runs

PREFIX: Final = f"{DOMAIN}/jobs"
JOB_NIGHTLY: Final = "nightly"
JOBS: Final = (JOB_NIGHTLY, JOB_RETENTION)
RUNS_SHOWN: Final = 50


def next_daily(at: dt_time, now: datetime) -> datetime:
    """The next time of day `at` after `now`, in `now`'s time zone."""
    scheduled = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
    return scheduled if scheduled > now else scheduled + timedelta(days=1)


async def nightly_job(hass: HomeAssistant, now: datetime) -> dict[str, Any] | None:
    """The nightly pass as a job, when memory is on."""
    if (memory := hass.data.get(DATA_MEMORY)) is None:
        return None
    at = nightly_time(schedule_entry(hass))
    found = await memory.async_read(lambda db: nightly_runs.list_runs(db, RUNS_SHOWN))
    return {
        "job": JOB_NIGHTLY,
        "schedule": at.isoformat("minutes") if at else None,
        "next_run": next_daily(at, now).isoformat() if at else None,
        "running": hass.data[DATA_NIGHTLY].running,
        "runs": [
            {
                key: run[key]
                for key in ("trigger", "started_at", "duration", "outcome", "summary")
            }
            for run in found
        ],
    }


async def retention_job(hass: HomeAssistant, now: datetime) -> dict[str, Any]:
    """The record's daily retention as a job."""
    at = dt_time(RETENTION_HOUR)
    return {
        "job": JOB_RETENTION,
        "schedule": at.isoformat("minutes"),
        "next_run": next_daily(at, now).isoformat(),
        "running": is_running(hass, JOB_RETENTION),
        "runs": await hass.data[DATA_STORE].async_run(
            lambda db: list_runs(db, JOB_RETENTION)
        ),
    }


@admin_command({vol.Required("type"): f"{PREFIX}/list"})
async def websocket_list_jobs(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Every scheduled job with its next run and last runs."""
    now = dt_util.now()
    jobs = [await nightly_job(hass, now), await retention_job(hass, now)]
    return {"jobs": [job for job in jobs if job]}


async def run_now(hass: HomeAssistant, job: str) -> dict[str, Any]:
    """Run a job for a person on the panel; what it did."""
    if job == JOB_NIGHTLY:
        return await hass.data[DATA_NIGHTLY].async_run("person")
    deleted = await async_run_job(
        hass,
        JOB_RETENTION,
        "person",
        hass.data[DATA_RECORD].async_apply_retention,
        lambda deleted: {"deleted": deleted},
    )
    return {"outcome": "ok", "summary": {"deleted": deleted}}


@admin_command(
    {vol.Required("type"): f"{PREFIX}/run_now", vol.Required("job"): vol.In(JOBS)}
)
async def websocket_run_job(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Run a job now and answer when it ended."""
    job = msg["job"]
    if job == JOB_NIGHTLY and DATA_MEMORY not in hass.data:
        raise Refused(websocket_api.ERR_NOT_FOUND, "Memory is off")
    nightly = hass.data.get(DATA_NIGHTLY)
    if is_running(hass, job) or (job == JOB_NIGHTLY and nightly and nightly.running):
        raise Refused(ERR_IN_PROGRESS, f"The {job} job is running")
    return await run_now(hass, job)


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the Jobs page's commands."""
    websocket_api.async_register_command(hass, websocket_list_jobs)
    websocket_api.async_register_command(hass, websocket_run_job)
