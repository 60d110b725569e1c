"""The record's daily retention, a job of the Jobs page.

At RETENTION_HOUR every day it deletes the conversations older than their
entry's retention (`Record.async_apply_retention`); each run is recorded
through the jobs registry.
"""

from datetime import datetime, time as dt_time
from typing import Any, Final

from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import Event, HomeAssistant, callback
from homeassistant.helpers.event import async_track_time_change

from ..jobs import async_register_job
from ..store import StoreError
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
        self.running = False

    async def async_run(self, trigger: str, job_run: int | None) -> dict[str, Any]:
        """Delete the conversations past their retention; say how many."""
        self.running = True
        try:
            deleted = await self.record.async_apply_retention()
        finally:
            self.running = False
        return {"outcome": "ok", "summary": {"deleted": deleted}}


@callback
def async_setup_retention(hass: HomeAssistant, record: Record) -> None:
    """Register retention as a job and run it daily while the record is available."""
    retention = async_register_job(hass, RetentionJob(record))

    async def scheduled(now: datetime) -> None:
        if not record.available:
            return
        try:
            await retention.async_run("schedule")
        except StoreError:
            return  # reported by the store

    unsubscribe = async_track_time_change(
        hass, scheduled, hour=RETENTION_HOUR, minute=0, second=0
    )

    @callback
    def stop(event: Event) -> None:
        unsubscribe()

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, stop)
