"""What the benchmarks share: their command line, statistics in ms, the prompt cache."""

import argparse
from pathlib import Path
from typing import Any

import aiohttp
from homeassistant.components.conversation import trace

from tests.harness.home_assistant import median_p95
from tests.harness.real_engines import RealLlamaServer

# The example tool files the agent is given in the benchmarks.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tools"


def command_line(doc: str, runs: int) -> argparse.ArgumentParser:
    """A benchmark's parser: its docstring's first line, `--runs` (`runs` by default)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=runs)
    return parser


def median_p95_ms(seconds: list[float]) -> tuple[float, float]:
    """Median and p95 of times in seconds, in milliseconds."""
    median, p95 = median_p95(seconds)
    return median * 1000, p95 * 1000


def cache_share(timings: dict[str, Any]) -> float:
    """The share of the prompt's tokens that came from the cache."""
    return timings["cache_n"] / (timings["cache_n"] + timings["prompt_n"])


def last_turn_timings() -> dict[str, Any]:
    """llama-server's timings of the last conversation's first request."""
    events = trace.async_get_traces()[-1].as_dict()["events"]
    return next(
        timing
        for event in events
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        for timing in event["data"].get("timings", ())
    )


async def empty_the_cache(server: RealLlamaServer, length: int) -> None:
    """Send an unrelated prompt of about `length` tokens, evicting the cached one."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{server.url}/chat/completions",
            json={
                "messages": [{"role": "user", "content": "z" * length}],
                "max_tokens": 1,
            },
        ) as response,
    ):
        await response.read()
