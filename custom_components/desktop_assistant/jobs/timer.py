"""When a job runs: daily at its time of day, and once after a missed run.

The registry gives each registered job a `DailyTimer`; this is the one place
anything is timed by the time of day. A run was missed when none started
since the job's last scheduled time before now (nor was the job first timed
since): it runs CATCH_UP_DELAY after the check, which a busy or locked store
makes again as late.
"""

from collections.abc import Awaitable, Callable
from datetime import datetime, time as dt_time, timedelta
import logging
from typing import Any, Final

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later, async_track_time_change
from homeassistant.util import dt as dt_util

from ..const import DOMAIN
from ..runtime import DATA_STORE
from ..store import StoreError
from .runs import first_seen, last_start

CATCH_UP_DELAY: Final = 120.0
SCHEDULE: Final = "schedule"
CATCH_UP: Final = "catch_up"

_LOGGER = logging.getLogger(__name__)


def last_scheduled(at: dt_time, now: datetime) -> datetime:
    """The last time of day `at` at or before `now`, in `now`'s time zone."""
    scheduled = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
    return scheduled if scheduled <= now else scheduled - timedelta(days=1)


def next_daily(at: dt_time, now: datetime) -> datetime:
    """The next time of day `at` after `now`, in `now`'s time zone."""
    scheduled = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
    return scheduled if scheduled > now else scheduled + timedelta(days=1)


class DailyTimer:
    """One job's timers: its time of day, and the catch-up after a missed run."""

    def __init__(
        self,
        hass: HomeAssistant,
        job: str,
        schedule: Callable[[], dt_time | None],
        run: Callable[[str], Awaitable[Any]],
    ) -> None:
        """Time `job` by what `schedule` answers; `run` runs it with a trigger."""
        self.hass = hass
        self.job = job
        self._schedule = schedule
        self._run = run
        self._unsubscribe: list[CALLBACK_TYPE] = []
        # Counts `async_stop` calls, so a check that outlives its timers adds none.
        self._generation = 0

    @callback
    def async_start(self) -> None:
        """Run daily at the job's time (unless off); catch up a missed run."""
        self.async_stop()
        if (at := self._schedule()) is None:
            return

        async def scheduled(now: datetime) -> None:
            await self._async_run(SCHEDULE)

        self._unsubscribe.append(
            async_track_time_change(
                self.hass, scheduled, hour=at.hour, minute=at.minute, second=0
            )
        )
        self.hass.async_create_background_task(
            self._async_catch_up(at), f"{DOMAIN} {self.job} catch-up"
        )

    @callback
    def async_stop(self) -> None:
        """Cancel the timers."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        self._generation += 1

    async def async_missed(self, at: dt_time, now: datetime) -> bool:
        """Whether no run started since the last scheduled time before `now`."""
        store = self.hass.data[DATA_STORE]
        seen = await store.async_run(
            lambda db: first_seen(db, self.job, now.timestamp())
        )
        last_run = await store.async_run(lambda db: last_start(db, self.job))
        return max(seen, last_run or 0.0) < last_scheduled(at, now).timestamp()

    async def _async_catch_up(self, at: dt_time) -> None:
        """Run once soon after start when the last scheduled run was missed."""
        generation = self._generation
        try:
            missed = await self.async_missed(at, dt_util.now())
        except StoreError as err:
            # The store raised its Repairs issue; look again once it may be free.
            _LOGGER.info("Checking for a missed %s run later: %s", self.job, err)
            self._async_soon(generation, lambda: self._async_catch_up(at))
            return
        if missed:
            self._async_soon(generation, lambda: self._async_run(CATCH_UP))

    async def _async_run(self, trigger: str) -> None:
        """Run the job; a store that cannot take its run row reports itself."""
        try:
            await self._run(trigger)
        except StoreError as err:
            _LOGGER.info("The %s job (%s) did not start: %s", self.job, trigger, err)

    @callback
    def _async_soon(
        self, generation: int, work: Callable[[], Awaitable[object]]
    ) -> None:
        """Run `work` after the catch-up delay, unless the timers stopped since."""
        if generation != self._generation:
            return

        async def later(now: datetime) -> None:
            await work()

        self._unsubscribe.append(async_call_later(self.hass, CATCH_UP_DELAY, later))
