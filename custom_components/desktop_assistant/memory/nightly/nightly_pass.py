"""The nightly pass: notes from quiet conversations, then a checked tidy-up plan.

The jobs registry runs it (at the time of day of an entry's options, on
`desktop_assistant.run_nightly`, on *Run now*, and once soon after start
when Home Assistant was down at that time) and hands it the run's id, under
which memory keeps what the run changed. A run asks for generation in the
background (`server/background.py`), extracts (`extract.py`), then
consolidates (`consolidate.py`); it ends `ok`, `no_server`, `cancelled` or
`failed` with why, which the registry records.
"""

import asyncio
import logging
import sqlite3

from homeassistant.core import HomeAssistant

from ...clock import monotonic_seconds
from ...jobs import JobResult, Outcome
from ...jobs.outcome import CANCELLED, NO_SERVER, OK, database_failed, failed
from ...runtime import DATA_NIGHTLY_JOB, DATA_RECORD
from ...server.background import async_background_generator
from ...server.generate import GenerationError
from ...store import StoreError
from ..errors import PageError
from ..memory import Memory
from . import runs
from .consolidate import async_consolidate
from .extract import async_extract
from .failing import async_report_failing
from .summary import Run

_LOGGER = logging.getLogger(__name__)


class NightlyPass:
    """Runs the pass; the registry runs one at a time."""

    def __init__(self, hass: HomeAssistant, memory: Memory) -> None:
        """Prepare; the jobs registry runs it."""
        self.hass = hass
        self.memory = memory

    async def async_run(self, job_run: int) -> JobResult:
        """Run the pass now, as the registry's run `job_run`."""
        started = monotonic_seconds()
        run = Run(job_run)
        await self.memory.async_write(lambda db, now: runs.insert_run(db, job_run))
        try:
            outcome = await self._async_pass(run)
        except asyncio.CancelledError:
            # HA is stopping: the run's detail is written before the task ends.
            await asyncio.shield(self._async_finish(run, Outcome(CANCELLED), started))
            raise
        outcome = await self._async_finish(run, outcome, started)
        return JobResult(outcome, run.summary.as_dict())

    async def _async_pass(self, run: Run) -> Outcome:
        """Extract, then consolidate; return the outcome."""
        try:
            generator = await async_background_generator(self.hass)
            if generator is None:
                return Outcome(NO_SERVER)
            record = self.hass.data[DATA_RECORD]
            failure = await async_extract(record, self.memory, generator, run)
            if failure is None:
                await async_consolidate(self.memory, generator, run)
        except GenerationError as err:
            run.detail["error"] = str(err)
            _LOGGER.warning("The nightly pass stopped: %s", err)
            return failed(err.kind)
        except StoreError as err:
            return database_failed(err)
        except PageError as err:
            run.detail["error"] = str(err)
            _LOGGER.warning("The nightly pass could not apply its plan: %s", err)
            return failed(f"plan not applied ({err.code})")
        except Exception as err:  # a bug must not leave the run running
            _LOGGER.exception("The nightly pass failed")
            run.detail["error"] = repr(err)
            return failed(type(err).__name__)
        return failure or Outcome(OK)

    async def _async_finish(
        self, run: Run, outcome: Outcome, started: float
    ) -> Outcome:
        """Write the run's detail; answer its outcome, a database fault if refused."""
        job = self.hass.data[DATA_NIGHTLY_JOB]
        try:
            kept = await job.async_kept_runs()

            def work(connection: sqlite3.Connection, now: float) -> None:
                runs.finish_run(connection, run.run_id, detail=run.detail, kept=kept)

            await self.memory.async_write(work)
            earlier = await job.async_failures_in_a_row()
        except StoreError as err:  # reported by the store already
            outcome = database_failed(err)
        else:
            async_report_failing(
                self.hass, earlier + 1 if outcome.failed else 0, outcome
            )
        # Measured once the run's writes are done, as the registry records it.
        duration = monotonic_seconds() - started
        _LOGGER.info(
            "Nightly pass %s in %.1f s: %s", outcome, duration, run.summary.as_dict()
        )
        return outcome
