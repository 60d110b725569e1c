"""What failing over costs a question in wyoming-whisper-relay.

From AudioStop to Transcript for a 1 s utterance, against whisper-server
stand-ins on loopback, in one run:

- baseline: one healthy server;
- first known down: the first server hangs (accepts, never answers) and the
  start check found it down; the second answers;
- first refusing, not yet known: the first refuses connections and no check
  has run since it went away;
- first silent, not yet known: the first accepts and never answers, not yet
  known down, so the question waits for its health check's connect timeout.

Targets: known down adds at most 5 ms, refused 50 ms, silent the connect
timeout plus 50 ms.

    scripts/bench whisper_failover [--runs N] [--connect-timeout S]
"""

import asyncio
import logging
import time

from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop

from tests.harness.benchmark import command_line
from tests.harness.home_assistant import median_p95
from tests.harness.whisper_server import (
    WhisperServerStandIn,
    serve as serve_whisper,
    serve_silent,
)
from tests.harness.wyoming import (
    free_port,
    read_until,
    tcp_client,
    tone,
    whisper_failover,
)

AUDIO = tone(16000, 2, 1)


async def one_question(port: int) -> float:
    """Seconds from AudioStop to Transcript."""
    async with tcp_client(port) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await client.write_event(AudioChunk(16000, 2, 1, AUDIO).event())
        started = time.perf_counter()
        await client.write_event(AudioStop().event())
        event = (await read_until(client, "transcript"))[-1]
        assert event.type == "transcript", event.data
    return time.perf_counter() - started


async def measure(
    urls: list[str], runs: int, connect_timeout: float, forget: str | None = None
) -> list[float]:
    """Time `runs` questions.

    With `forget`, that server is not yet known down at each question: the
    check its failure asks for has finished before the next one starts.
    """
    async with whisper_failover(urls, connect_timeout=connect_timeout) as (
        port,
        servers,
    ):

        async def ask() -> float:
            checks = servers.checks
            if forget is not None:
                servers.up[forget] = None
            seconds = await one_question(port)
            if forget is not None:
                await servers.wait_checks(checks + 1)
            return seconds

        await ask()  # warm up
        return [await ask() for _ in range(runs)]


async def main(runs: int, connect_timeout: float) -> None:
    """Measure the four cases in one run and print the table."""
    refused = f"http://127.0.0.1:{free_port()}"
    async with (
        serve_whisper(WhisperServerStandIn(speech=" Lights on.")) as healthy,
        serve_silent() as hanging,
    ):
        cases = {
            "baseline (one healthy server)": await measure(
                [healthy.url], runs, connect_timeout
            ),
            "first known down": await measure(
                [hanging.url, healthy.url], runs, connect_timeout
            ),
            "first refusing, not yet known": await measure(
                [refused, healthy.url], runs, connect_timeout, refused
            ),
            "first silent, not yet known": await measure(
                [hanging.url, healthy.url], runs, connect_timeout, hanging.url
            ),
        }
    targets = [None, 0.005, 0.050, connect_timeout + 0.050]
    base = median_p95(cases["baseline (one healthy server)"])[0]
    print(
        f"AudioStop to Transcript, {runs} run(s), connect timeout {connect_timeout:g} s"
    )
    print("| case | median ms | p95 ms | added ms | target added ms |")
    print("| --- | --- | --- | --- | --- |")
    for (name, times), target in zip(cases.items(), targets, strict=True):
        median, p95 = median_p95(times)
        added = median - base
        goal = "" if target is None else f"<= {target * 1000:.0f}"
        if target is not None:
            goal += " ok" if added <= target else " MISSED"
        print(
            f"| {name} | {median * 1000:.1f} | {p95 * 1000:.1f} | "
            f"{'' if target is None else f'{added * 1000:.1f}'} | {goal} |"
        )


if __name__ == "__main__":
    parser = command_line(__doc__, runs=20)
    parser.add_argument("--connect-timeout", type=float, default=0.5)
    arguments = parser.parse_args()
    # Each failover logs a warning; the table is the output.
    logging.getLogger("wyoming_services").setLevel(logging.ERROR)
    asyncio.run(main(arguments.runs, arguments.connect_timeout))
