"""A reply cut at *Maximum tokens* is marked, so nobody takes it as whole.

Natively llama-server ends such a reply with `finish_reason: length`; a
constrained answer is held to the characters the limit leaves and ends
there as valid JSON. Either way the reply ends with an ellipsis, in the
dialog, in speech and in the record.
"""

import json
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
import pytest

from custom_components.desktop_assistant.agent.loop import CUT_MARK
from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TOOL_CALLS,
    DEFAULT_AGENT_OPTIONS,
    TOOL_CALLS_CONSTRAINED,
)
from tests.harness.agent import TEST_API, Agent, speech
from tests.harness.llama_server import MODEL_ID, Reply, chunk, final_chunk, sse

# JSON_ROOM (32) less than the limit: the answer's characters.
MAX_TOKENS = 60
BUDGET = MAX_TOKENS - 32


def reply(text: str, finish: str) -> Reply:
    """`text` streamed a few characters a token, ended by `finish`."""
    events = [sse(chunk({"role": "assistant", "content": None}))]
    events += [sse(chunk({"content": text[i : i + 4]})) for i in range(0, len(text), 4)]
    return Reply(events=[*events, sse(final_chunk(finish)), sse("[DONE]")])


def options(**extra: Any) -> dict[str, Any]:
    return DEFAULT_AGENT_OPTIONS | {
        CONF_MODEL: MODEL_ID,
        CONF_LLM_HASS_API: [TEST_API],
        CONF_MAX_TOKENS: MAX_TOKENS,
        **extra,
    }


@pytest.mark.parametrize("agent_options", [options()])
async def test_a_native_reply_cut_at_the_limit_is_marked(agent: Agent) -> None:
    agent.server.script = [reply("Paris is the capital of France and it", "length")]
    result = await agent.ask("Tell me about Paris")
    assert speech(result) == f"Paris is the capital of France and it{CUT_MARK}"
    assert result.response.speech_slots == {}

    agent.server.script = [reply("Paris is the capital of France.", "stop")]
    result = await agent.ask("And again?", result.conversation_id)
    assert speech(result) == "Paris is the capital of France."


@pytest.mark.parametrize(
    "agent_options", [options(**{CONF_TOOL_CALLS: TOOL_CALLS_CONSTRAINED})]
)
async def test_a_constrained_answer_held_to_the_limit_is_marked(agent: Agent) -> None:
    cut = ("Paris is the capital of France, on the Seine, " * 2)[:BUDGET]
    agent.server.script = [reply(json.dumps({"answer": cut}), "stop")]
    result = await agent.ask("Tell me about Paris")
    assert speech(result) == f"{cut}{CUT_MARK}"

    whole = "Paris is in France."
    agent.server.script = [reply(json.dumps({"answer": whole}), "stop")]
    result = await agent.ask("Where is Paris?", result.conversation_id)
    assert speech(result) == whole
