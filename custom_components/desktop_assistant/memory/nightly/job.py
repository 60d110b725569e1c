"""The nightly pass as a job of the Jobs page, and as the `run_nightly` action."""

from datetime import time as dt_time
from typing import Any, Final

from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)

from ...access import async_check_may_act
from ...const import DOMAIN, SERVICE_RUN_NIGHTLY
from ...runtime import DATA_NIGHTLY_JOB
from ...store import StoreError, unavailable_error
from .nightly_pass import NightlyPass
from .schedule import nightly_time, schedule_entry

JOB_NIGHTLY: Final = "nightly"


class NightlyJob:
    """The pass, timed by the options of the entry that schedules it."""

    name = JOB_NIGHTLY

    def __init__(self, hass: HomeAssistant, nightly: NightlyPass) -> None:
        """Describe and run `nightly`."""
        self.hass = hass
        self.nightly = nightly

    @property
    def schedule(self) -> dt_time | None:
        """The time of day the pass runs; None when the options turn it off."""
        return nightly_time(schedule_entry(self.hass))

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        return self.nightly.running

    async def async_run(self, trigger: str, job_run: int | None) -> dict[str, Any]:
        """Run the pass; its run id (for revert), outcome and summary."""
        answer = await self.nightly.async_run(job_run)
        return answer | {"recorded_summary": without_quotes(answer.get("summary", {}))}


def without_quotes(summary: dict[str, Any]) -> dict[str, Any]:
    """A run's summary as the Jobs page keeps it: its counts.

    The refusals quote pages: memory keeps them in its run's detail, where
    Delete forever scrubs them (memory/forget.py).
    """
    return {key: value for key, value in summary.items() if key != "refusals"}


@callback
def async_register_run_nightly(hass: HomeAssistant) -> None:
    """Offer the `run_nightly` action, whether memory opened or not."""
    if hass.services.has_service(DOMAIN, SERVICE_RUN_NIGHTLY):
        return  # memory is set up again once a store that was closed opens

    async def run_nightly(call: ServiceCall) -> ServiceResponse:
        # Automations and scripts (no user, or the system) run the pass.
        await async_check_may_act(hass, call.context)
        if (job := hass.data.get(DATA_NIGHTLY_JOB)) is None:
            raise unavailable_error("memory_unavailable", "the database is not open")
        try:
            return await job.async_run("action")
        except StoreError as err:
            raise unavailable_error("memory_unavailable", err) from err

    hass.services.async_register(
        DOMAIN,
        SERVICE_RUN_NIGHTLY,
        run_nightly,
        supports_response=SupportsResponse.OPTIONAL,
    )
