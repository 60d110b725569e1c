"""What the benchmarks share: their command line, statistics in ms, the prompt cache."""

import argparse
from pathlib import Path
import shutil
from typing import Any

import aiohttp
from homeassistant.components.conversation import trace
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from tests.harness.agent_entry import async_add_agent
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


def last_turn_cache_share() -> float:
    """The share of the last conversation's first prompt that came from the cache."""
    return cache_share(last_turn_timings())


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


async def async_add_cache_agent(hass: HomeAssistant, server: RealLlamaServer) -> str:
    """The example tool files and an agent on `server` that answers alike each time.

    Temperature 0 and 8 tokens: the prompt, not the answer, is what is measured.
    """
    await hass.async_add_executor_job(
        shutil.copytree, EXAMPLES, Path(hass.config.path(DOMAIN, "tools"))
    )
    _, agent_id = await async_add_agent(
        hass,
        server.url,
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: str(server.model_path),
            CONF_LLM_HASS_API: [DOMAIN],
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: 8,
        },
    )
    return agent_id


def print_shares(shares: dict[str, list[float]], baseline: str | None = None) -> None:
    """A table of cache shares: median, p95, lowest, and against `baseline`'s median."""
    width = max(map(len, shares)) + 2
    against = f" {'vs cold':>8}" if baseline else ""
    print(f"{'turn':<{width}} {'median':>8} {'p95':>8} {'lowest':>8}{against}")
    cold = median_p95(shares[baseline])[0] if baseline else 0.0
    for name, values in shares.items():
        median, p95 = median_p95(values)
        line = f"{name:<{width}} {median:>8.1%} {p95:>8.1%} {min(values):>8.1%}"
        print(line + (f" {median - cold:>+8.1%}" if baseline else ""))
