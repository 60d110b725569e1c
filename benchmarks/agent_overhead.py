"""Agent overhead per turn, against the scripted llama-server stand-in.

Runs a real Home Assistant in this process with the agent set up, and the
stand-in streaming replies event by event over loopback. For each turn it
measures, with one clock:

- first delta: the stand-in's first byte -> the first ChatLog delta with text;
- result: the stand-in's last byte -> `ConversationResult` in hand;
- round gap (tool turn only): last byte of round 1 -> request of round 2
  received, which includes the (instant) tool call.

The baseline, run in the same process on the same replies, is a bare aiohttp
client reading the stream and parsing each event: what any client pays for
loopback and parsing. The agent's added time is the difference.

Run: scripts/bench agent_overhead [--runs 200]
"""

import asyncio
from dataclasses import dataclass
import json
import time
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS
from tests.harness.agent_entry import async_add_agent, async_ask, register_tools
from tests.harness.benchmark import command_line, median_p95_ms
from tests.harness.home_assistant import running_home_assistant
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    Reply,
    serve,
    text_reply,
    tool_call_reply,
)


def long_reply() -> Reply:
    """A 300-token answer, one token per event."""
    return text_reply(*[f"word{n} " for n in range(300)])


def tool_turn() -> list[Reply]:
    """Round 1 calls the tool; round 2 answers in 20 tokens."""
    return [
        tool_call_reply(("GetDateTime", "{}")),
        text_reply(*[f"word{n} " for n in range(20)]),
    ]


@dataclass
class Sample:
    """One turn's latencies, in seconds."""

    first_delta: float
    result: float
    round_gap: float | None = None

    @classmethod
    def of_turn(
        cls, server: LlamaServerStandIn, first_delta_at: float, result_at: float
    ) -> "Sample":
        """The turn the stand-in just streamed, read with one clock."""
        first_byte, _ = server.stream_times[0]
        return cls(
            first_delta_at - first_byte,
            result_at - server.stream_times[-1][1],
            round_gap(server),
        )


def script_turn(server: LlamaServerStandIn, replies: list[Reply]) -> None:
    """Give the stand-in the turn's replies and forget the last turn's times."""
    server.script = list(replies)
    server.stream_times.clear()
    server.received_at.clear()


async def baseline_turn(
    session: aiohttp.ClientSession, server: LlamaServerStandIn, replies: list[Reply]
) -> Sample:
    """Read each reply with a bare client that only splits and parses events."""
    script_turn(server, replies)
    first_event_at = done_at = 0.0
    for _ in replies:
        async with session.post(f"{server.url}/chat/completions", json={}) as response:
            buffer = b""
            async for block in response.content.iter_any():
                buffer += block
                *events, buffer = buffer.split(b"\n\n")
                for event in events:
                    data = event.removeprefix(b"data: ")
                    if data != b"[DONE]":
                        json.loads(data)
                        if not first_event_at:
                            first_event_at = time.perf_counter()
        done_at = time.perf_counter()
    return Sample.of_turn(server, first_event_at, done_at)


async def agent_turn(
    hass: HomeAssistant, server: LlamaServerStandIn, agent_id: str, replies: list[Reply]
) -> Sample:
    """Ask the agent, with a delta listener as the Assist pipeline has."""
    script_turn(server, replies)
    first_delta_at = 0.0

    def listener(chat_log: conversation.ChatLog, delta: dict[str, Any]) -> None:
        nonlocal first_delta_at
        if not first_delta_at and (delta.get("content") or delta.get("tool_calls")):
            first_delta_at = time.perf_counter()

    await async_ask(hass, agent_id, "Hello", listener=listener)
    return Sample.of_turn(server, first_delta_at, time.perf_counter())


def round_gap(server: LlamaServerStandIn) -> float | None:
    """Seconds from round 1's last byte to round 2's request, if there were two."""
    if len(server.received_at) < 2:
        return None
    return server.received_at[1] - server.stream_times[0][1]


async def main(runs: int) -> None:
    """Run both turns `runs` times each way and print the table."""
    async with (
        running_home_assistant() as hass,
        serve(LlamaServerStandIn()) as server,
        aiohttp.ClientSession() as session,
    ):
        # An instant tool, so the tool turn measures the loop, not a tool.
        api_id = register_tools(hass, {"GetDateTime": "14:05"})
        _, agent_id = await async_add_agent(
            hass,
            server.url,
            DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [api_id]},
        )

        rows = []
        for name, make in (
            ("300-token reply", lambda: [long_reply()]),
            ("2-round tool turn", tool_turn),
        ):
            baseline = [
                await baseline_turn(session, server, make()) for _ in range(runs)
            ]
            agent = [
                await agent_turn(hass, server, agent_id, make()) for _ in range(runs)
            ]
            for metric in ("first_delta", "result", "round_gap"):
                base_values = [getattr(s, metric) for s in baseline]
                agent_values = [getattr(s, metric) for s in agent]
                if agent_values[0] is None:
                    continue
                base_med, base_p95 = median_p95_ms(base_values)
                med, p95 = median_p95_ms(agent_values)
                rows.append((name, metric, base_med, base_p95, med, p95))

    print(f"Agent overhead per turn, {runs} runs each (ms)")
    print(
        f"{'turn':<18} {'metric':<12} {'baseline med':>12} {'baseline p95':>12} "
        f"{'agent med':>10} {'agent p95':>10} {'added med':>10} {'ratio':>7}"
    )
    for name, metric, base_med, base_p95, med, p95 in rows:
        ratio = med / base_med if base_med else float("nan")
        print(
            f"{name:<18} {metric:<12} {base_med:>12.3f} {base_p95:>12.3f} "
            f"{med:>10.3f} {p95:>10.3f} {med - base_med:>10.3f} {ratio:>7.2f}"
        )


if __name__ == "__main__":
    asyncio.run(main(command_line(__doc__, runs=200).parse_args().runs))
