"""AI Task *evaluate* on SmolLM2-135M: a five-question task's time and prompt cache.

Runs the real llama-server on SmolLM2-135M-Instruct (which `scripts/setup`
installs) with its host-memory prompt cache off (`--cache-ram 0`), and a
real Home Assistant in this process whose AI task entity asks through a
recording pass-through (`tests/harness/llama_tap.py`) that reads each
answer's `timings` and time. Each run first evicts the slot's cache with an
unrelated prompt, then evaluates one task of five questions about one
state (some 400 tokens: a household's entities at night): the whole task's
time, each question's time, and the share of each prompt read from
llama-server's cache. The first question, a cold prompt, is the baseline of
both tables. The share of a later question is the state's tokens against
the question's own (20 to 50): the larger the state, the larger the share.

Then it asks a handful of questions whose answer is plain from the state
and reports how many SmolLM2 got right: reported, never asserted, since a
135M model may get them wrong.

Needs Home Assistant 2026.11 or later (AI Task evaluate).
Run: scripts/bench --ha newest evaluate_bench [--runs 5]
"""

import asyncio
from pathlib import Path
import tempfile
import time
from typing import Any

from homeassistant.components import ai_task
from homeassistant.core import HomeAssistant
import pytest

from tests.harness.agent_entry import async_add_task_entity, async_evaluate
from tests.harness.benchmark import (
    cache_share,
    command_line,
    empty_the_cache,
    median_p95_ms,
    print_shares,
)
from tests.harness.home_assistant import running_home_assistant
from tests.harness.llama_tap import LlamaTap, tapped
from tests.harness.real_engines import (
    MISSING_SMOLLM2,
    SMOLLM2_MODEL,
    RealLlamaServer,
    cached_model,
    start_llama_server,
)

NO_EVALUATE = (
    "Home Assistant 2026.11 (AI Task evaluate) is not installed: this "
    "environment has an older one (scripts/bench --ha newest evaluate_bench)"
)
FIRST, LATER = "question 1 (cold prompt)", "each of questions 2-5"
# The state of a household at night, as an automation would pass it: what
# the questions are about, some 400 tokens of it.
STATE = {
    "time": "23:40",
    "people_home": 0,
    "entities": {
        "lock.front_door": "unlocked",
        "lock.back_door": "locked",
        "alarm_control_panel.home": "disarmed",
        "binary_sensor.front_door_contact": "closed",
        "binary_sensor.garage_door": "open",
        "binary_sensor.living_room_motion": "off",
        "binary_sensor.hallway_motion": "off",
        "light.living_room": "on",
        "light.kitchen": "off",
        "light.porch": "on",
        "switch.coffee_machine": "off",
        "climate.living_room": {"state": "heat", "current_temperature": 19.5},
        "sensor.outside_temperature": {"state": 4.2, "unit": "°C"},
        "camera.front_door": "idle",
        "person.anouk": "not_home",
        "person.daan": "not_home",
        "media_player.living_room_tv": "off",
        "cover.garage": "open",
        "sensor.power_consumption": {"state": 412, "unit": "W"},
    },
}
TASK: dict[str, Any] = {
    "door": {"type": "noul", "instructions": "Is the front door unlocked?"},
    "alone": {"type": "noul", "instructions": "Is anyone home?"},
    "tell": {
        "type": "choice",
        "instructions": "Who should be told?",
        "criteria": {"owner": "the owner", "nobody": "no one"},
    },
    "do": {
        "type": "choice",
        "instructions": "What should be done first?",
        "criteria": {
            "lock": "lock the front door",
            "lights": "turn off the lights",
            "nothing": "nothing",
        },
    },
    "risk": {
        "type": "score",
        "instructions": "How risky is the home's state?",
        "criteria": ["no risk", "a little risk", "some risk", "high risk"],
    },
}
# (state, question, the answer plain from the state): yes/no, or a choice.
DIRECTION: list[tuple[dict[str, Any], dict[str, Any], str]] = [
    (
        {"front_door": "unlocked"},
        {"type": "noul", "instructions": "Is the front door unlocked?"},
        "yes",
    ),
    (
        {"front_door": "locked"},
        {"type": "noul", "instructions": "Is the front door unlocked?"},
        "no",
    ),
    (
        {"kitchen_lights": "on"},
        {"type": "noul", "instructions": "Are the kitchen lights on?"},
        "yes",
    ),
    (
        {"kitchen_lights": "off"},
        {"type": "noul", "instructions": "Are the kitchen lights on?"},
        "no",
    ),
    (
        {"outside_temperature_c": 38},
        {
            "type": "choice",
            "instructions": "How is the weather outside?",
            "criteria": {"hot": "hot", "cold": "cold"},
        },
        "hot",
    ),
    (
        {"outside_temperature_c": -12},
        {
            "type": "choice",
            "instructions": "How is the weather outside?",
            "criteria": {"hot": "hot", "cold": "cold"},
        },
        "cold",
    ),
]


async def evaluate(
    hass: HomeAssistant, entity_id: str, questions: dict[str, Any], state: Any
) -> dict[str, Any]:
    """The task's answers, keyed by question."""
    result = await async_evaluate(hass, entity_id, questions, "benchmark", state=state)
    return result.answers


async def measure(
    server: RealLlamaServer, tap: LlamaTap, runs: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], list[str]]:
    """The times and cache shares of `runs` tasks, and the direction check."""
    times: dict[str, list[float]] = {FIRST: [], LATER: [], "whole task": []}
    shares: dict[str, list[float]] = {FIRST: [], LATER: []}
    async with running_home_assistant() as hass:
        entity_id = await async_add_task_entity(hass, tap.url, str(server.model_path))
        for _ in range(runs):
            await empty_the_cache(server, 2000)
            asked = len(tap.timings)
            started = time.perf_counter()
            await evaluate(hass, entity_id, TASK, STATE)
            times["whole task"].append(time.perf_counter() - started)
            first, *rest = zip(tap.seconds[asked:], tap.timings[asked:], strict=True)
            times[FIRST].append(first[0])
            shares[FIRST].append(cache_share(first[1]))
            times[LATER] += [seconds for seconds, _ in rest]
            shares[LATER] += [cache_share(timings) for _, timings in rest]
        direction = [
            await direction_line(hass, entity_id, state, question, expected)
            for state, question, expected in DIRECTION
        ]
    return times, shares, direction


async def direction_line(
    hass: HomeAssistant,
    entity_id: str,
    state: dict[str, Any],
    question: dict[str, Any],
    expected: str,
) -> str:
    """One question whose answer is plain: what SmolLM2 answered, right or not."""
    answer = (await evaluate(hass, entity_id, {"q": question}, state))["q"]
    if question["type"] == "noul":
        yes = answer.noul >= 0.5
        said, confidence = ("yes", answer.noul) if yes else ("no", 1 - answer.noul)
    else:
        said, confidence = answer.choice, answer.probabilities[answer.choice]
    mark = "right" if said == expected else "WRONG"
    return (
        f"{mark:<6} {question['instructions']:<30} {state}: {said} ({confidence:.0%})"
    )


def print_times(times: dict[str, list[float]], baseline: str) -> None:
    """Median and p95 in ms, and each median against the baseline's."""
    width = max(map(len, times)) + 2
    print(f"{'':<{width}} {'median':>9} {'p95':>9} {'vs cold':>8}")
    cold, _ = median_p95_ms(times[baseline])
    for name, values in times.items():
        median, p95 = median_p95_ms(values)
        print(f"{name:<{width}} {median:>7.0f}ms {p95:>7.0f}ms {median / cold:>7.2f}x")


async def main(runs: int) -> None:
    """Measure and print the tables."""
    if not hasattr(ai_task.AITaskEntityFeature, "EVALUATE"):
        print(f"skipped: {NO_EVALUATE}")
        return
    with tempfile.TemporaryDirectory() as workdir:
        try:
            model = cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
            with start_llama_server(
                Path(workdir), "--cache-ram", "0", model=model
            ) as server:
                async with tapped(server.url) as tap:
                    times, shares, direction = await measure(server, tap, runs)
        except pytest.skip.Exception as skipped:
            print(f"skipped: {skipped.msg}")
            return
    print(f"A five-question evaluate task on SmolLM2-135M, {runs} runs")
    print_times(times, baseline=FIRST)
    print("\nPrompt tokens served from llama-server's cache")
    print_shares(shares, baseline=FIRST)
    right = sum(line.startswith("right") for line in direction)
    print(
        f"\nDirection on plain questions (reported, not asserted): {right} of {len(direction)}"
    )
    print("\n".join(direction))


if __name__ == "__main__":
    asyncio.run(main(command_line(__doc__, runs=5).parse_args().runs))
