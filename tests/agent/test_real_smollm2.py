"""The agent through Home Assistant against a real instruct model.

SmolLM2-135M-Instruct on the packaged llama-server, both installed by
scripts/setup; without them these tests skip and the test run says so at
its end.
"""

from typing import Any

from homeassistant import config_entries
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.typing import WebSocketGenerator

from custom_components.desktop_assistant.const import (
    DOMAIN,
)
from custom_components.desktop_assistant.text import words
from tests.harness.agent_entry import async_ask
from tests.harness.real_engines import (
    REAL_MODEL_TIMEOUT,
    RealLlamaServer,
)

pytestmark = REAL_MODEL_TIMEOUT


async def test_a_plain_question_is_answered_in_streamed_english_and_recorded(
    hass: HomeAssistant,
    hass_ws_client: WebSocketGenerator,
    smollm2_agent: tuple[config_entries.ConfigEntry, str],
    smollm2_server: RealLlamaServer,
) -> None:
    entry, entity_id = smollm2_agent
    deltas: list[dict[str, Any]] = []
    result = await async_ask(
        hass,
        entity_id,
        "What is the capital of France?",
        None,
        lambda _log, delta: deltas.append(delta),
    )
    pieces = [delta["content"] for delta in deltas if delta.get("content")]
    answer = result.response.speech["plain"]["speech"]
    assert len(pieces) > 1
    assert answer == "".join(pieces)
    # A 135M model knows this much, whatever the date in the prompt.
    assert "paris" in words(answer)

    await hass.async_block_till_done()
    client = await hass_ws_client(hass)
    await client.send_json_auto_id(
        {
            "type": f"{DOMAIN}/conversations/get",
            "conversation_id": result.conversation_id,
        }
    )
    response = await client.receive_json()
    assert response["success"], response
    (reply,) = [e for e in response["result"]["entries"] if e["kind"] == "assistant"]
    assert reply["text"] == answer
    assert reply["server"] == entry.title
    # The model's id as llama-server gives it: the path it loaded.
    assert reply["model"] == str(smollm2_server.model_path)
