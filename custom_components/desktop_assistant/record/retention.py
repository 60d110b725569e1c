"""The record's daily retention, a job of the Jobs page.

At RETENTION_HOUR every day (the jobs registry times and records it) it
deletes the conversations older than their entry's retention
(`Record.async_apply_retention`).
"""

from datetime import time as dt_time
from typing import Final

from homeassistant.core import HomeAssistant, callback

from ..jobs import JobResult, async_register_job
from .conversation_record import Record

JOB_RETENTION: Final = "retention"
RETENTION_HOUR: Final = 4


class RetentionJob:
    """The record's retention as the jobs registry knows it."""

    name = JOB_RETENTION
    schedule = dt_time(RETENTION_HOUR)

    def __init__(self, record: Record) -> None:
        """Apply retention to `record`."""
        self.record = record

    async def async_run(self, trigger: str, job_run: int) -> JobResult:
        """Delete the conversations past their retention; say how many."""
        deleted = await self.record.async_apply_retention()
        return JobResult(summary={"deleted": deleted})


@callback
def async_setup_retention(hass: HomeAssistant, record: Record) -> None:
    """Register retention as a job: the registry runs it daily."""
    async_register_job(hass, RetentionJob(record))
