"""The nightly pass as a job of the registry, timed by an entry, and its action.

The first loaded server entry's options say when the pass runs (or that it
does not); `async_time_nightly` tells the registry when that entry changes.
"""

from datetime import time as dt_time

from homeassistant.config_entries import ConfigEntry, ConfigEntryState
from homeassistant.core import (
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.util import dt as dt_util

from ...access import async_check_may_act
from ...const import (
    CONF_NIGHTLY,
    CONF_NIGHTLY_TIME,
    DEFAULT_ENTRY_OPTIONS,
    DOMAIN,
    SERVICE_RUN_NIGHTLY,
)
from ...jobs import JobResult
from ...runtime import DATA_MEMORY, DATA_NIGHTLY_JOB
from ...store import StoreError, unavailable_error
from .nightly_pass import NightlyPass
from .runs import JOB_NIGHTLY, get_run


class NightlyJob:
    """The pass, at the time of day of the entry that times it."""

    name = JOB_NIGHTLY

    def __init__(self, nightly: NightlyPass) -> None:
        """Describe and run `nightly`; no entry times it yet."""
        self.nightly = nightly
        self.entry: ConfigEntry | None = None

    @property
    def schedule(self) -> dt_time | None:
        """The time of day the pass runs; None when the options turn it off."""
        return nightly_time(self.entry) if self.entry else None

    async def async_run(self, trigger: str, job_run: int) -> JobResult:
        """Run the pass as the registry's run `job_run`."""
        return await self.nightly.async_run(job_run)


@callback
def async_time_nightly(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """Time the pass by the first loaded entry, again when `entry` unloads.

    Only the entry that times the pass changes its time: another entry's
    setup or unload leaves the registry's timers, and their catch-up, alone.
    """
    if schedule_entry(hass, adding=entry) is entry:
        _async_timed_by(hass, entry)

    @callback
    def unloaded() -> None:
        if schedule_entry(hass, adding=entry) is entry:
            _async_timed_by(hass, schedule_entry(hass, removing=entry))

    entry.async_on_unload(unloaded)


@callback
def _async_timed_by(hass: HomeAssistant, entry: ConfigEntry | None) -> None:
    """Let `entry` time the pass as it is registered now (memory may be new)."""
    if (registered := hass.data.get(DATA_NIGHTLY_JOB)) is None:
        return
    job: NightlyJob = registered.job  # type: ignore[assignment]
    job.entry = entry
    registered.async_schedule_changed()


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


def nightly_time(entry: ConfigEntry) -> dt_time | None:
    """The time of day the entry's options run the pass at; None when they turn it off."""
    options = DEFAULT_ENTRY_OPTIONS | dict(entry.options)
    if not options[CONF_NIGHTLY]:
        return None
    parsed = dt_util.parse_time(options[CONF_NIGHTLY_TIME])
    if parsed is None:
        raise ValueError(f"not a time of day: {options[CONF_NIGHTLY_TIME]!r}")
    return parsed


@callback
def async_register_run_nightly(hass: HomeAssistant) -> None:
    """Offer the `run_nightly` action, whether memory opened or not."""
    if hass.services.has_service(DOMAIN, SERVICE_RUN_NIGHTLY):
        return  # memory is set up again once a store that was closed opens

    async def run_nightly(call: ServiceCall) -> ServiceResponse:
        # Automations and scripts (no user, or the system) run the pass.
        await async_check_may_act(hass, call.context)
        if (registered := hass.data.get(DATA_NIGHTLY_JOB)) is None:
            raise unavailable_error("memory_unavailable", "the database is not open")
        try:
            answer = await registered.async_run("action")
            # What was refused quotes pages: memory keeps it, not the registry.
            kept = await hass.data[DATA_MEMORY].async_read(
                lambda db: get_run(db, answer["run_id"])
            )
        except StoreError as err:
            raise unavailable_error("memory_unavailable", err) from err
        return answer | {"refusals": kept["detail"].get("refusals", [])}

    hass.services.async_register(
        DOMAIN,
        SERVICE_RUN_NIGHTLY,
        run_nightly,
        supports_response=SupportsResponse.OPTIONAL,
    )
