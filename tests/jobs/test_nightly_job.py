"""Memory's nightly pass as a registered job, and its action while memory is off."""

from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.setup import async_setup_component
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.jobs.runs import list_runs
from custom_components.desktop_assistant.runtime import DATA_MEMORY, DATA_STORE
from custom_components.desktop_assistant.store import DB_FILE


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
    # The Jobs page keeps the counts; the refusals quote pages.
    assert response["summary"]["refusals"] == []
    assert run["summary"] == {
        key: value for key, value in response["summary"].items() if key != "refusals"
    }

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
