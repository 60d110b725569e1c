"""The Wyoming servers' latency: TTS first audio, STT overhead, event-loop lag.

1. Kokoro, time to first audio for a five-sentence reply, streaming vs
   one-shot. The reply arrives as an LLM writes it (`--chars-per-second`);
   the clock starts at its first character. One-shot waits for the whole
   text and sends `Synthesize`; streaming sends each word as a
   `SynthesizeChunk`. First audio = the first audio-chunk event; last audio
   = the end of the answer. Run on the tiny model from
   scripts/make-test-models and, when `--kokoro-dir` holds kokoro-v1.0.onnx
   and voices-v1.0.bin, on the real model. Target: ratio <= 0.3.
2. whisper wrapper overhead: a 3 s utterance through wyoming-whisper-cpp
   (AudioStop -> Transcript) against the same WAV posted straight to
   `/inference` (request -> parsed answer), both to the whisper-server
   stand-in on loopback. Target: <= 10 ms.
3. Event-loop lag while 8 clients (in another process) have the five
   sentences synthesised at once: how late a 5 ms sleep in the server's loop
   wakes, next to the same probe on an idle loop. Target: <= 20 ms.

Everything runs in this process, on loopback. Run: scripts/bench wyoming_bench
"""

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
import io
from pathlib import Path
import statistics
import sys
import tempfile
import time
import wave

import aiohttp
import numpy as np
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from tests.wyoming.helpers import KOKORO_VOICES, tcp_server
from tests.wyoming.whisper_server import WhisperServerStandIn
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import SWITCH_INTERVAL, build_service
from wyoming_services.whisper.__main__ import build_info
from wyoming_services.whisper.client import WhisperClient
from wyoming_services.whisper.handler import WhisperEventHandler

REPO = Path(__file__).parents[1]
REPLY = (
    "Sure, I checked the weather for tomorrow. "
    "It will be sunny in the morning with a light breeze. "
    "Clouds will roll in around three in the afternoon. "
    "There is a small chance of rain in the evening. "
    "Take a light jacket if you go out tonight."
)
CLIENTS = 8
LAG_TICK = 0.005


@dataclass
class Timing:
    """Seconds from the reply's first character."""

    first_audio: float
    last_audio: float


def ms(seconds: float) -> str:
    """Seconds as a right-aligned millisecond column."""
    return f"{seconds * 1000:8.1f}"


def p95(values: list[float]) -> float:
    """The 95th percentile."""
    return float(np.percentile(values, 95))


# 1. Kokoro first audio ---------------------------------------------------


async def one_shot(port: int, chars_per_second: float) -> Timing:
    """Wait for the whole reply, then send it as one Synthesize."""
    started = time.perf_counter()
    await asyncio.sleep(len(REPLY) / chars_per_second)  # the LLM writes
    first = None
    async with AsyncTcpClient("127.0.0.1", port) as client:
        voice = SynthesizeVoice(name="en")
        await client.write_event(Synthesize(text=REPLY, voice=voice).event())
        while (event := await client.read_event()) is not None:
            if event.type == "audio-chunk" and first is None:
                first = time.perf_counter() - started
            if event.type in ("audio-stop", "error"):
                break
    assert first is not None, "no audio"
    return Timing(first, time.perf_counter() - started)


async def streaming(port: int, chars_per_second: float) -> Timing:
    """Send each word as the LLM writes it, reading audio meanwhile."""
    started = time.perf_counter()
    first = None
    async with AsyncTcpClient("127.0.0.1", port) as client:

        async def write() -> None:
            await client.write_event(
                SynthesizeStart(voice=SynthesizeVoice(name="en")).event()
            )
            for word in REPLY.split(" "):
                await asyncio.sleep((len(word) + 1) / chars_per_second)
                await client.write_event(SynthesizeChunk(text=f"{word} ").event())
            await client.write_event(Synthesize(text=REPLY).event())
            await client.write_event(SynthesizeStop().event())

        writer = asyncio.create_task(write())
        while (event := await client.read_event()) is not None:
            if event.type == "audio-chunk" and first is None:
                first = time.perf_counter() - started
            if event.type in ("synthesize-stopped", "error"):
                break
        await writer
    assert first is not None, "no audio"
    return Timing(first, time.perf_counter() - started)


async def first_audio_rows(
    label: str, config: Path, runs: int, chars_per_second: float
) -> None:
    """Print section 1's rows for one model."""
    service = build_service(load_config(config))
    try:
        async with tcp_server(service.handler_factory) as port:
            await one_shot(port, 1e9)  # warm up onnxruntime and espeak
            results: dict[str, list[Timing]] = {"one-shot": [], "streaming": []}
            for _ in range(runs):
                results["one-shot"].append(await one_shot(port, chars_per_second))
                results["streaming"].append(await streaming(port, chars_per_second))
    finally:
        service.close()
    medians = {}
    for mode, timings in results.items():
        first = [t.first_audio for t in timings]
        last = [t.last_audio for t in timings]
        medians[mode] = statistics.median(first)
        print(
            f"{label:<6} {mode:<10} {ms(medians[mode])} {ms(p95(first))}"
            f"   {ms(statistics.median(last))} {ms(p95(last))}"
        )
    ratio = medians["streaming"] / medians["one-shot"]
    verdict = "ok" if ratio <= 0.3 else "MISSED"
    print(
        f"{label:<6} ratio streaming / one-shot first audio: {ratio:.2f}"
        f"  (target <= 0.3: {verdict})"
    )


# 2. whisper overhead -----------------------------------------------------


def utterance(seconds: float = 3.0) -> bytes:
    """A 220 Hz tone as 16 kHz mono 16-bit PCM."""
    t = np.arange(int(16000 * seconds)) / 16000
    return (0.3 * np.sin(2 * np.pi * 220 * t) * 32767).astype("<i2").tobytes()


def wav(pcm: bytes) -> bytes:
    """The PCM as a WAV file."""
    with io.BytesIO() as buffer:
        with wave.open(buffer, "wb") as file:
            file.setnchannels(1)
            file.setsampwidth(2)
            file.setframerate(16000)
            file.writeframes(pcm)
        return buffer.getvalue()


async def direct(session: aiohttp.ClientSession, url: str, pcm: bytes) -> float:
    """POST the utterance as the wrapper does; seconds to the parsed answer."""
    form = aiohttp.FormData()
    form.add_field("file", wav(pcm), filename="audio.wav", content_type="audio/wav")
    form.add_field("language", "it")
    form.add_field("response_format", "verbose_json")
    form.add_field("temperature", "0.0")
    started = time.perf_counter()
    async with session.post(f"{url}/inference", data=form) as response:
        await response.json()
    return time.perf_counter() - started


async def wrapped(port: int, pcm: bytes) -> float:
    """Stream the utterance over Wyoming; seconds from AudioStop to Transcript."""
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="it").event())
        await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        for offset in range(0, len(pcm), 2048):
            chunk = AudioChunk(16000, 2, 1, pcm[offset : offset + 2048])
            await client.write_event(chunk.event())
        started = time.perf_counter()
        await client.write_event(AudioStop().event())
        while (event := await client.read_event()) is not None:
            if event.type in ("transcript", "error"):
                assert event.type == "transcript", event.data
                break
        return time.perf_counter() - started


async def whisper_rows(runs: int) -> None:
    """Print section 2's rows."""
    stand_in = WhisperServerStandIn()
    await stand_in.start()
    pcm = utterance()
    try:
        async with aiohttp.ClientSession() as session:
            factory = partial(
                WhisperEventHandler,
                info=build_info(stand_in.url, ""),
                client=WhisperClient(session, stand_in.url, 10.0),
                language_setting="",
            )
            async with tcp_server(factory) as port:
                straight, through = [], []
                await wrapped(port, pcm)  # warm up both connections
                await direct(session, stand_in.url, pcm)
                for _ in range(runs):
                    straight.append(await direct(session, stand_in.url, pcm))
                    through.append(await wrapped(port, pcm))
    finally:
        await stand_in.stop()
    overhead = statistics.median(through) - statistics.median(straight)
    overhead_p95 = p95(through) - p95(straight)
    print(
        f"{'direct /inference':<20} {ms(statistics.median(straight))} {ms(p95(straight))}"
    )
    print(
        f"{'through Wyoming':<20} {ms(statistics.median(through))} {ms(p95(through))}"
    )
    verdict = "ok" if overhead <= 0.010 else "MISSED"
    print(
        f"{'overhead':<20} {ms(overhead)} {ms(overhead_p95)}"
        f"   (target median <= 10 ms: {verdict})"
    )


# 3. event-loop lag -------------------------------------------------------


async def measure_lag(work: Callable[[], Awaitable[None]]) -> list[float]:
    """Run `work` while a ticker records how late each 5 ms sleep wakes."""
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(LAG_TICK)
            lags.append(time.perf_counter() - before - LAG_TICK)

    tick = asyncio.create_task(ticker())
    try:
        await work()
    finally:
        done.set()
        await tick
    return lags


def lag_row(label: str, lags: list[float]) -> None:
    """Print one row of section 3."""
    late = sum(lag > 0.020 for lag in lags)
    print(
        f"{label:<6} {ms(statistics.median(lags))} {ms(p95(lags))} "
        f"{ms(float(np.percentile(lags, 99)))} {ms(max(lags))} {late:>6} / {len(lags)}"
    )


# The clients run in their own process, as Home Assistant does, so that the
# probe measures the server's loop and not the clients' work.
CLIENTS_SCRIPT = """
import asyncio, sys
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeVoice

port, clients, rounds, text = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

async def speak():
    async with AsyncTcpClient("127.0.0.1", port) as client:
        voice = SynthesizeVoice(name="en")
        await client.write_event(Synthesize(text=text, voice=voice).event())
        while (event := await client.read_event()) is not None:
            if event.type in ("audio-stop", "error"):
                assert event.type == "audio-stop", event.data
                return

async def main():
    for _ in range(rounds):
        await asyncio.gather(*(speak() for _ in range(clients)))

asyncio.run(main())
"""


async def lag_rows(label: str, config: Path, rounds: int) -> float:
    """Print section 3's row for one model; return how long the clients took."""
    service = build_service(load_config(config))
    try:
        async with tcp_server(service.handler_factory) as port:
            await one_shot(port, 1e9)

            async def clients() -> None:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    CLIENTS_SCRIPT,
                    str(port),
                    str(CLIENTS),
                    str(rounds),
                    REPLY,
                )
                if await process.wait() != 0:
                    raise SystemExit("the benchmark's clients failed")

            started = time.perf_counter()
            lags = await measure_lag(clients)
    finally:
        service.close()
    lag_row(label, lags)
    return time.perf_counter() - started


# -------------------------------------------------------------------------


def kokoro_config(folder: Path, models: Path) -> Path:
    """A config for the model files in `models`, with the seed's two voices."""
    path = folder / f"{models.name}.toml"
    path.write_text(
        f'[kokoro]\nmodel = "{models / "kokoro-v1.0.onnx"}"\n'
        f'voices = "{models / "voices-v1.0.bin"}"\n{KOKORO_VOICES}'
    )
    return path


async def main(args: argparse.Namespace, folder: Path) -> None:
    """Make the tiny model in `folder`, then run the three sections."""
    tiny = folder / "tiny"
    maker = await asyncio.create_subprocess_exec(
        sys.executable,
        str(REPO / "scripts" / "make-test-models"),
        str(tiny),
        stdout=asyncio.subprocess.DEVNULL,
    )
    if await maker.wait() != 0:
        raise SystemExit("scripts/make-test-models failed")
    models = {"tiny": kokoro_config(folder, tiny)}
    real = args.kokoro_dir
    if real and (real / "kokoro-v1.0.onnx").is_file():
        models["real"] = kokoro_config(folder, real)

    print(
        f"Kokoro: first audio for a five-sentence reply ({len(REPLY)} characters "
        f"written at {args.chars_per_second:g} characters/s), ms"
    )
    print(
        f"{'model':<6} {'mode':<10} {'first':>8} {'p95':>8}   {'last':>8} {'p95':>8}"
        "   (first/last: medians)"
    )
    for label, config in models.items():
        runs = args.runs if label == "tiny" else max(3, args.runs // 4)
        await first_audio_rows(label, config, runs, args.chars_per_second)
    if "real" not in models:
        print("real   not run: --kokoro-dir has no kokoro-v1.0.onnx/voices-v1.0.bin")

    print(f"\nwhisper wrapper, 3 s utterance, {args.whisper_runs} runs, ms")
    print(f"{'':<20} {'median':>8} {'p95':>8}")
    await whisper_rows(args.whisper_runs)

    print(f"\nEvent-loop lag, {CLIENTS} clients synthesising at once, ms")
    print(
        f"{'model':<6} {'median':>8} {'p95':>8} {'p99':>8} {'max':>8}"
        "  ticks > 20 ms (target: none)"
    )
    seconds = 0.0
    for label, config in models.items():
        seconds = max(seconds, await lag_rows(label, config, args.lag_rounds))
    # The same probe as long with nothing to do: what the machine itself adds.
    lag_row("idle", await measure_lag(partial(asyncio.sleep, seconds)))


def parse_args() -> argparse.Namespace:
    """Runs per section, the LLM's writing speed, the real model's folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--whisper-runs", type=int, default=100)
    parser.add_argument("--lag-rounds", type=int, default=40)
    parser.add_argument("--chars-per-second", type=float, default=200.0)
    parser.add_argument(
        "--kokoro-dir", type=Path, help="folder with the real Kokoro v1.0 files"
    )
    return parser.parse_args()


if __name__ == "__main__":
    sys.setswitchinterval(SWITCH_INTERVAL)  # as wyoming-kokoro runs
    with tempfile.TemporaryDirectory() as temporary:
        asyncio.run(main(parse_args(), Path(temporary)))
