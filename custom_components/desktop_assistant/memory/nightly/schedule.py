"""When the nightly pass runs: daily at the entry's time, and once after a missed run."""

from collections.abc import Awaitable, Callable
from datetime import datetime, time as dt_time, timedelta
import logging
import sqlite3
from typing import Final

from homeassistant.config_entries import ConfigEntry, ConfigEntryState
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later, async_track_time_change
from homeassistant.util import dt as dt_util

from ...const import CONF_NIGHTLY, CONF_NIGHTLY_TIME, DEFAULT_ENTRY_OPTIONS, DOMAIN
from ...jobs import RegisteredJob
from ...store import StoreError
from . import runs
from .nightly_pass import NightlyPass

CATCH_UP_DELAY: Final = 120.0
STATE_FIRST_SEEN = "first_seen"

_LOGGER = logging.getLogger(__name__)


class NightlySchedule:
    """The timers of the nightly pass, set by a loaded entry's options."""

    def __init__(
        self,
        hass: HomeAssistant,
        nightly: NightlyPass,
        job: RegisteredJob,
    ) -> None:
        """Prepare; `async_schedule` starts the timers, which run `job`."""
        self.hass = hass
        self.nightly = nightly
        # The pass as a registered job: its runs are recorded, their starts read.
        self._job = job
        self._unsubscribe: list[CALLBACK_TYPE] = []
        # Counts `async_stop` calls, so a check that outlives its timers adds none.
        self._generation = 0

    @callback
    def async_schedule(self, entry: ConfigEntry) -> None:
        """Run daily at the entry's time of day (unless off); catch up a missed run."""
        self.async_stop()
        if (at := nightly_time(entry)) is None:
            return

        async def scheduled(now: datetime) -> None:
            await self._async_run("schedule")

        self._unsubscribe.append(
            async_track_time_change(
                self.hass, scheduled, hour=at.hour, minute=at.minute, second=0
            )
        )
        self.hass.async_create_background_task(
            self._async_catch_up(at), f"{DOMAIN} nightly catch-up"
        )

    async def _async_catch_up(self, at: dt_time) -> None:
        """Run once soon after start when the last scheduled run was missed."""
        generation = self._generation
        try:
            missed = await self.async_missed(at, dt_util.now())
        except StoreError as err:
            # The store raised its Repairs issue; look again once it may be free.
            _LOGGER.info("Checking for a missed nightly pass later: %s", err)
            self._async_soon(generation, lambda: self._async_catch_up(at))
            return
        if missed:
            self._async_soon(generation, lambda: self._async_run("catch_up"))

    async def _async_run(self, trigger: str) -> None:
        """Run the pass; a store that cannot take its run row reports itself."""
        try:
            await self._job.async_run(trigger)
        except StoreError as err:
            _LOGGER.info("The nightly pass (%s) did not start: %s", trigger, err)

    @callback
    def _async_soon(
        self, generation: int, job: Callable[[], Awaitable[object]]
    ) -> None:
        """Run `job` after the catch-up delay, unless the timers stopped since."""
        if generation != self._generation:
            return

        async def later(now: datetime) -> None:
            await job()

        self._unsubscribe.append(async_call_later(self.hass, CATCH_UP_DELAY, later))

    async def async_missed(self, at: dt_time, now: datetime) -> bool:
        """Whether no run started since the last scheduled time before `now`."""
        scheduled = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
        if scheduled > now:
            scheduled -= timedelta(days=1)

        def first_seen(connection: sqlite3.Connection, stamp: float) -> float:
            if runs.get_state(connection, STATE_FIRST_SEEN) is None:
                runs.set_state(connection, STATE_FIRST_SEEN, str(stamp))
            return float(runs.get_state(connection, STATE_FIRST_SEEN) or stamp)

        seen = await self.nightly.memory.async_write(first_seen)
        last_run = await self._job.async_last_start(ignoring=("skipped",))
        return max(seen, last_run or 0.0) < scheduled.timestamp()

    @callback
    def async_stop(self) -> None:
        """Cancel the timers."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        self._generation += 1


def schedule_entry(
    hass: HomeAssistant,
    *,
    adding: ConfigEntry | None = None,
    removing: ConfigEntry | None = None,
) -> ConfigEntry | None:
    """The entry whose options time the nightly pass: the first loaded one.

    `adding` is an entry still being set up, `removing` one being unloaded.
    """
    for entry in hass.config_entries.async_entries(DOMAIN):
        if entry is removing:
            continue
        if entry is adding or entry.state is ConfigEntryState.LOADED:
            return entry
    return None


def nightly_time(entry: ConfigEntry | None) -> dt_time | None:
    """The time of day the entry's options run the pass at; None when they turn it off."""
    options = DEFAULT_ENTRY_OPTIONS | dict(entry.options if entry else {})
    if not options[CONF_NIGHTLY]:
        return None
    return parse_time(options[CONF_NIGHTLY_TIME])


def parse_time(value: str) -> dt_time:
    """Read a time of day ("03:00" or "03:00:00")."""
    parsed = dt_util.parse_time(value)
    if parsed is None:
        raise ValueError(f"not a time of day: {value!r}")
    return parsed
