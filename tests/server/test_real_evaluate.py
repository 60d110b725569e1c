"""AI Task *evaluate* on the real llama-server with SmolLM2-135M-Instruct.

What the model answers is not asserted (a 135M model may get a question
wrong; `scripts/bench evaluate_bench` reports its direction): the shape of
each answer is, and what reached llama-server, read through a recording
pass-through in front of it. Skipped before Home Assistant 2026.11.
"""

import math
from typing import Any

from homeassistant.components import ai_task
from homeassistant.core import HomeAssistant
import pytest

from custom_components.desktop_assistant.server.probabilities import TOP_LOGPROBS
from tests.harness.agent_entry import async_add_task_entity, async_evaluate
from tests.harness.llama_tap import tapped
from tests.harness.real_engines import REAL_MODEL_TIMEOUT, RealLlamaServer

pytestmark = [
    pytest.mark.skipif(
        not hasattr(ai_task.AITaskEntityFeature, "EVALUATE"),
        reason="this Home Assistant has no AI Task evaluate (added in 2026.11)",
    ),
    REAL_MODEL_TIMEOUT,
]
STATE = {"entity_id": "lock.front_door", "state": "unlocked", "people_home": 0}
QUESTIONS: dict[str, Any] = {
    "unlocked": {"type": "noul", "instructions": "Is the front door unlocked?"},
    "tell": {
        "type": "choice",
        "instructions": "Who should be told about the front door?",
        "criteria": {
            "owner": "the owner, who is away",
            "nobody": "no one",
            "neighbour": "the neighbour",
        },
    },
    "risk": {
        "type": "score",
        "instructions": "How risky is the home's state?",
        "criteria": ["no risk", "a little risk", "some risk", "high risk"],
    },
}


def check_distribution(probabilities: list[float]) -> None:
    assert math.fsum(probabilities) == pytest.approx(1.0, abs=1e-6)
    assert all(0.0 <= p <= 1.0 for p in probabilities)


async def test_smollm2_answers_a_noul_a_choice_and_a_score(
    hass: HomeAssistant, socket_enabled: None, smollm2_server: RealLlamaServer
) -> None:
    async with tapped(smollm2_server.url) as tap:
        entity_id = await async_add_task_entity(
            hass, tap.url, str(smollm2_server.model_path)
        )
        result = await async_evaluate(hass, entity_id, QUESTIONS, state=STATE)
    answers = result.answers
    assert 0.0 <= answers["unlocked"].noul <= 1.0
    tell = answers["tell"]
    check_distribution(list(tell.probabilities.values()))
    assert list(tell.probabilities) == list(QUESTIONS["tell"]["criteria"])
    assert tell.choice == max(tell.probabilities, key=tell.probabilities.__getitem__)
    risk = answers["risk"]
    check_distribution(risk.probabilities)
    assert len(risk.probabilities) == 4
    assert risk.score == pytest.approx(
        sum(index * p for index, p in enumerate(risk.probabilities))
    )

    grammars = [request["grammar"] for request in tap.chat_requests]
    assert grammars == [
        'root ::= "yes" | "Yes" | "no" | "No"',
        'root ::= "A" | "B" | "C"',
        'root ::= "0" | "1" | "2" | "3"',
    ]
    for request in tap.chat_requests:
        assert request["logprobs"] is True
        assert request["top_logprobs"] == TOP_LOGPROBS
        assert request["cache_prompt"] is True
    # Every question after the first read the state from the cache.
    assert all(timings["cache_n"] > 0 for timings in tap.timings[1:])
