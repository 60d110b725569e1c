"""Memory's nightly pass as a registered job: its action, and who times it.

The registry runs it at the time of day of the first loaded entry's
options; its timers are tested with retention's in tests/jobs/test_timer.py.
"""

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.jobs.runs import list_runs
from custom_components.desktop_assistant.jobs.timer import CATCH_UP_DELAY
from custom_components.desktop_assistant.memory.nightly.job import schedule_entry
from custom_components.desktop_assistant.runtime import (
    DATA_MEMORY,
    DATA_NIGHTLY_JOB,
    DATA_STORE,
)
from custom_components.desktop_assistant.store import DB_FILE
from tests.harness.agent import Agent
from tests.harness.agent_entry import async_add_agent
from tests.harness.fixed_time import AT_FIXED_NOON, START_INSTANTS, next_local_time


async def command(client: Any, **message: Any) -> dict[str, Any]:
    await client.send_json_auto_id(message)
    return await client.receive_json()


async def test_the_nightly_action_is_a_recorded_run_of_the_nightly_job(
    hass: HomeAssistant, hass_ws_client: Any
) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    # No server entry: the pass has no server to ask.
    response = await hass.services.async_call(
        DOMAIN, "run_nightly", {}, blocking=True, return_response=True
    )
    assert response["outcome"] == "no_server"
    (run,) = await hass.data[DATA_STORE].async_run(lambda db: list_runs(db, "nightly"))
    assert (run["trigger"], run["outcome"]) == ("action", "no_server")
    assert response["run_id"] == run["id"]
    # The Jobs page keeps the counts; the refusals, which quote pages, are
    # memory's alone.
    assert response["refusals"] == []
    assert run["summary"] == response["summary"]
    assert "refusals" not in run["summary"]

    client = await hass_ws_client(hass)
    done = await command(client, type=f"{DOMAIN}/jobs/run_now", job="nightly")
    assert done["result"]["outcome"] == "no_server"
    listed = await command(client, type=f"{DOMAIN}/jobs/list")
    (nightly,) = [job for job in listed["result"]["jobs"] if job["job"] == "nightly"]
    assert [run["trigger"] for run in nightly["runs"]] == ["person", "action"]
    assert nightly["running"] is False


async def test_while_memory_is_off_its_action_and_commands_say_so(
    hass: HomeAssistant, hass_ws_client: Any
) -> None:
    path = Path(hass.config.path(DOMAIN, DB_FILE))

    def garbage() -> None:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"this is not a database, just some text " * 200)

    await hass.async_add_executor_job(garbage)
    assert await async_setup_component(hass, DOMAIN, {})
    assert DATA_MEMORY not in hass.data
    with pytest.raises(HomeAssistantError) as raised:
        await hass.services.async_call(
            DOMAIN, "run_nightly", {}, blocking=True, return_response=True
        )
    assert raised.value.translation_key == "memory_unavailable"
    assert "The household's memory is not available" in str(raised.value)

    client = await hass_ws_client(hass)
    answer = await command(client, type=f"{DOMAIN}/jobs/run_now", job="nightly")
    assert answer["error"]["code"] == "not_found"
    answer = await command(client, type=f"{DOMAIN}/memory/profile/create")
    assert answer["error"]["code"] == "unavailable"


async def triggers(hass: HomeAssistant) -> list[str]:
    """The pass's runs' triggers, newest first, once the runs under way ended."""
    await hass.async_block_till_done(wait_background_tasks=True)
    return [run["trigger"] for run in await hass.data[DATA_NIGHTLY_JOB].async_runs(10)]


async def at_half_past_five(
    hass: HomeAssistant, freezer: Any
) -> tuple[list[str], list[str]]:
    """Move past the next 05:30; the runs' triggers a second before it and after."""
    due = next_local_time(5, 30)
    freezer.move_to(due - timedelta(seconds=1))
    async_fire_time_changed(hass)
    before = await triggers(hass)
    freezer.move_to(due + timedelta(seconds=1))
    async_fire_time_changed(hass)
    return before, await triggers(hass)


@START_INSTANTS
async def test_runs_at_the_time_of_day_of_the_options(
    hass: HomeAssistant, agent: Agent, freezer: Any, start: datetime
) -> None:
    assert dt_util.now() == start
    hass.config_entries.async_update_entry(
        agent.entry,
        options={"nightly": True, "nightly_time": "05:30:00"},
    )
    await hass.async_block_till_done()
    assert hass.data[DATA_NIGHTLY_JOB].job.schedule == dt_util.parse_time("05:30")
    before, after = await at_half_past_five(hass, freezer)
    assert after == ["schedule", *before]


@START_INSTANTS
async def test_the_first_loaded_entry_times_the_pass_and_hands_it_on(
    hass: HomeAssistant, agent: Agent, freezer: Any, start: datetime
) -> None:
    assert dt_util.now() == start
    (subentry,) = agent.entry.subentries.values()
    second, _ = await async_add_agent(
        hass,
        agent.entry.data[CONF_URL],
        dict(subentry.data),
        entry_options={"nightly": True, "nightly_time": "05:30:00"},
    )
    await hass.async_block_till_done()
    assert schedule_entry(hass) is agent.entry
    # Unloading the first entry hands the schedule to the second, at its time.
    assert await hass.config_entries.async_unload(agent.entry.entry_id)
    assert schedule_entry(hass) is second
    before, after = await at_half_past_five(hass, freezer)
    assert after == ["schedule", *before]


@AT_FIXED_NOON
async def test_nightly_off_schedules_nothing(
    hass: HomeAssistant, agent: Agent, freezer: Any
) -> None:
    hass.config_entries.async_update_entry(
        agent.entry, options={"nightly": False, "nightly_time": "03:00:00"}
    )
    await hass.async_block_till_done()
    assert hass.data[DATA_NIGHTLY_JOB].job.schedule is None
    freezer.move_to(next_local_time(3, 0) + timedelta(seconds=1))
    async_fire_time_changed(hass)
    freezer.tick(timedelta(seconds=CATCH_UP_DELAY + 1))
    async_fire_time_changed(hass)
    assert await triggers(hass) == []
