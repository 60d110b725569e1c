"""Failover between two real llama-servers (the tiny model) on loopback.

The primary is a llama-server on a port fixed before it runs, stopped and
started as a desktop that sleeps; the fallback runs for the whole module.
"""

from collections.abc import Iterator
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
import pytest

from custom_components.desktop_assistant.record import database
from custom_components.desktop_assistant.runtime import DATA_RECORD
from tests.harness.agent_entry import async_ask
from tests.harness.failover import (
    answered_by,
    async_add_server,
    async_wait_for_health,
    connectivity,
)
from tests.harness.real_engines import (
    LlamaServerOnDemand,
    RealLlamaServer,
    start_llama_server,
)

FAULT_SENTENCES = ("Sorry",)


@pytest.fixture(scope="module")
def fallback_process(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealLlamaServer]:
    """The always-on box's llama-server, for the module."""
    with start_llama_server(tmp_path_factory.mktemp("fallback")) as server:
        yield server


def primary_model(primary: LlamaServerOnDemand) -> str:
    """The model the primary reports: the path of the file it loads."""
    return str(primary.workdir / "tiny-chatml.gguf")


async def ask(
    hass: HomeAssistant, agent_id: str, text: str, conversation_id: str | None = None
) -> tuple[Any, list[str]]:
    """Ask the agent; return the result and the text deltas it streamed."""
    pieces: list[str] = []
    result = await async_ask(
        hass,
        agent_id,
        text,
        conversation_id,
        lambda _log, delta: (
            pieces.append(delta["content"]) if delta.get("content") else None
        ),
    )
    return result, pieces


def assert_answered(result: Any) -> None:
    """An answer of the model: no fault sentence, no error."""
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert not result.response.speech["plain"]["speech"].startswith(FAULT_SENTENCES)


async def test_primary_stopped_the_fallback_answers_and_the_record_says_so(
    hass: HomeAssistant,
    socket_enabled: None,
    sleeping_llama_server: LlamaServerOnDemand,
    fallback_process: RealLlamaServer,
) -> None:
    primary = sleeping_llama_server
    await primary.async_start()
    fallback, _ = await async_add_server(
        hass, fallback_process.url, str(fallback_process.model_path)
    )
    entry, agent_id = await async_add_server(
        hass, primary.url, primary_model(primary), fallbacks=[fallback]
    )
    result, _ = await ask(hass, agent_id, "Hello")
    assert_answered(result)
    assert answered_by() == {"server": entry.title, "model": primary_model(primary)}

    # The desktop goes to sleep; nothing has checked it since.
    await hass.async_add_executor_job(primary.stop)
    assert entry.runtime_data.health.reachable is True
    result, pieces = await ask(hass, agent_id, "Are you there?")
    assert_answered(result)
    assert "".join(pieces) == result.response.speech["plain"]["speech"]
    fallback_model = str(fallback_process.model_path)
    assert answered_by() == {"server": fallback.title, "model": fallback_model}
    # The failed question made the health check look at once.
    await async_wait_for_health(hass, entry.runtime_data.health, False)
    assert connectivity(hass, entry) == "off"

    await hass.async_block_till_done()
    recorded = await hass.data[DATA_RECORD].async_read(
        lambda db: database.get_conversation(db, result.conversation_id)
    )
    replies = [e for e in recorded["entries"] if e["kind"] == "assistant"]
    assert [(e["server"], e["model"]) for e in replies] == [
        (fallback.title, fallback_model)
    ]
    assert not [e for e in recorded["entries"] if e["kind"] == "fault"]


async def test_started_while_the_primary_is_down_then_it_comes_back(
    hass: HomeAssistant,
    socket_enabled: None,
    sleeping_llama_server: LlamaServerOnDemand,
    fallback_process: RealLlamaServer,
) -> None:
    primary = sleeping_llama_server
    fallback, _ = await async_add_server(
        hass, fallback_process.url, str(fallback_process.model_path)
    )
    # Home Assistant starts with the desktop asleep: the agent still exists.
    entry, agent_id = await async_add_server(
        hass, primary.url, primary_model(primary), fallbacks=[fallback]
    )
    assert entry.runtime_data.health.reachable is False
    assert connectivity(hass, entry) == "off"
    assert connectivity(hass, fallback) == "on"

    ongoing, _ = await ask(hass, agent_id, "Good morning")
    assert_answered(ongoing)
    assert answered_by()["server"] == fallback.title

    await primary.async_start()
    await async_wait_for_health(hass, entry.runtime_data.health, True)
    assert connectivity(hass, entry) == "on"

    # A new conversation goes back to the desktop...
    result, _ = await ask(hass, agent_id, "New question")
    assert_answered(result)
    assert answered_by() == {"server": entry.title, "model": primary_model(primary)}
    # ...the ongoing one stays where its prompt cache is.
    result, _ = await ask(hass, agent_id, "And then?", ongoing.conversation_id)
    assert_answered(result)
    assert answered_by()["server"] == fallback.title
