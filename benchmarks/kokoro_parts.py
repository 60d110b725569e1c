"""Kokoro sections of wyoming_bench: first audio, and where its time goes.

The first piece's stages, ONNX Runtime's session options, and phrases
spoken before (the cache).

Not a benchmark of its own: `benchmarks/wyoming_bench.py` runs these.
"""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
import logging
from pathlib import Path
import statistics
import time

import numpy as np
import onnxruntime as rt
from wyoming.client import AsyncTcpClient
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from tests.harness.wyoming import tcp_client, tcp_server
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import (
    KokoroService,
    build_service,
    speak_at_start,
)
from wyoming_services.kokoro.cache import PhraseCache
from wyoming_services.kokoro.engine import (
    CHANNELS,
    RATE,
    WIDTH,
    KokoroEngine,
    load_kokoro,
    session_options,
)
from wyoming_services.kokoro.voices import VoiceCatalog

REPLY = (
    "It is sunny in Rome today, eighteen degrees with a light breeze from the "
    "sea, and it will stay dry until the evening. "
    "Clouds will roll in around three in the afternoon. "
    "There is a small chance of rain tonight. "
    "Take a light jacket if you go out."
)
FIRST_CLAUSE = REPLY[: REPLY.index(",") + 1]
VOICE = SynthesizeVoice(name="en")
BYTES_PER_SECOND = RATE * WIDTH * CHANNELS
# The first piece of the reply, and an announcement to cache.
FIRST_PIECE = "It is sunny"
SENTENCE = "The kitchen lights are on and the front door is locked."
ANNOUNCEMENT = "One moment, I am checking the calendar."
STAGES = ("phonemes", "style", "inference", "writing")
# The real model on a loaded machine: seconds an answer may take.
SLOW = 600.0


def uncached_service(config: Path, *, warm_up: bool = True) -> KokoroService:
    """The service with a cache that keeps nothing: every run synthesises."""
    service = build_service(load_config(config), warm_up=warm_up)
    service.engine.cache = PhraseCache(0)
    return service


def ms(seconds: float) -> str:
    """Seconds as a right-aligned millisecond column."""
    return f"{seconds * 1000:8.1f}"


def p95(values: list[float]) -> float:
    """The 95th percentile."""
    return float(np.percentile(values, 95))


@dataclass
class Timing:
    """One request, in seconds from the reply's first character."""

    first_audio: float
    after_clause: float  # first audio after the first clause was written
    last_audio: float
    synthesis: float  # from the request to the last audio
    audio: float  # seconds of audio
    gaps: float  # the satellite's buffer ran dry this long after it began
    longest_gap: float


class Playback:
    """A satellite that plays audio as it arrives, from the first chunk on."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.played_until: float | None = None
        self.seconds = 0.0
        self.gaps: list[float] = []

    def add(self, payload: bytes) -> None:
        """Take a chunk that arrived now."""
        now = time.perf_counter()
        self.arrivals.append(now)
        length = len(payload) / BYTES_PER_SECOND
        if self.played_until is None:
            self.played_until = now
        elif now > self.played_until:
            self.gaps.append(now - self.played_until)
            self.played_until = now
        self.played_until += length
        self.seconds += length


# 1. Kokoro first audio ---------------------------------------------------


async def read_audio(client: AsyncTcpClient, end: str, playback: Playback) -> None:
    """Play audio events until `end` (or an error, which ends the benchmark)."""
    while (event := await client.read_event()) is not None:
        if event.type == "audio-chunk":
            playback.add(event.payload or b"")
        if event.type == "error":
            raise SystemExit(f"the Kokoro service failed: {event.data}")
        if event.type == end:
            return
    raise SystemExit("the Kokoro service closed the connection")


def timing(started: float, clause: float, sent: float, playback: Playback) -> Timing:
    """One request's times from its playback and its moments."""
    first = playback.arrivals[0]
    return Timing(
        first_audio=first - started,
        after_clause=first - clause,
        last_audio=playback.arrivals[-1] - started,
        synthesis=playback.arrivals[-1] - sent,
        audio=playback.seconds,
        gaps=sum(playback.gaps),
        longest_gap=max(playback.gaps, default=0.0),
    )


async def one_shot(port: int, chars_per_second: float) -> Timing:
    """Wait for the whole reply, then send it as one Synthesize."""
    started = time.perf_counter()
    clause = started + len(FIRST_CLAUSE) / chars_per_second
    await asyncio.sleep(len(REPLY) / chars_per_second)  # the LLM writes
    playback = Playback()
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=SLOW) as client:
        sent = time.perf_counter()
        await client.write_event(Synthesize(text=REPLY, voice=VOICE).event())
        await read_audio(client, "audio-stop", playback)
    return timing(started, clause, sent, playback)


async def streaming(port: int, chars_per_second: float) -> Timing:
    """Send each word as the LLM writes it, playing audio meanwhile."""
    started = time.perf_counter()
    clause = started
    playback = Playback()
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=SLOW) as client:

        async def write() -> None:
            nonlocal clause
            await client.write_event(SynthesizeStart(voice=VOICE).event())
            written = 0
            for word in REPLY.split(" "):
                await asyncio.sleep((len(word) + 1) / chars_per_second)
                await client.write_event(SynthesizeChunk(text=f"{word} ").event())
                written += len(word) + 1
                if written - 1 == len(FIRST_CLAUSE):
                    clause = time.perf_counter()
            await client.write_event(Synthesize(text=REPLY).event())
            await client.write_event(SynthesizeStop().event())

        writer = asyncio.create_task(write())
        await read_audio(client, "synthesize-stopped", playback)
        await writer
    return timing(started, clause, started, playback)


async def first_audio_rows(
    label: str, config: Path, runs: int, chars_per_second: float
) -> None:
    """Print section 1's rows for one model."""
    service = uncached_service(config)
    try:
        async with tcp_server(service.handler_factory) as port:
            await one_shot(port, 1e9)  # warm up onnxruntime and espeak
            results: dict[str, list[Timing]] = {"one-shot": [], "streaming": []}
            for _ in range(runs):
                results["one-shot"].append(await one_shot(port, chars_per_second))
                results["streaming"].append(await streaming(port, chars_per_second))
    finally:
        service.close()
    for mode, timings in results.items():
        first = [t.first_audio for t in timings]
        clause = [t.after_clause for t in timings]
        rtf = statistics.median(t.synthesis / t.audio for t in timings)
        print(
            f"{label:<5} {mode:<10} {ms(statistics.median(first))} {ms(p95(first))}"
            f" {ms(statistics.median(clause))} {ms(p95(clause))}"
            f" {ms(statistics.median(t.last_audio for t in timings))}"
            f" {rtf if mode == 'one-shot' else float('nan'):6.2f}"
            f" {ms(statistics.median(t.gaps for t in timings))}"
            f" {ms(max(t.longest_gap for t in timings))}"
        )


class Breakdowns(logging.Handler):
    """Collects the per-stage seconds each request logs for its first piece."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep a request's breakdown."""
        if breakdown := getattr(record, "breakdown", None):
            self.seen.append(breakdown)


# 1b. Where the first piece's time goes ------------------------------------


async def first_piece(port: int) -> float:
    """Stream the first piece and a word after it; seconds to the first audio."""
    async with tcp_client(port) as client:
        client.read_timeout = SLOW
        await client.write_event(SynthesizeStart(voice=VOICE).event())
        started = time.perf_counter()
        await client.write_event(SynthesizeChunk(text=f"{FIRST_PIECE} in ").event())
        while (event := await client.read_event()) is not None:
            if event.type == "audio-chunk":
                first = time.perf_counter() - started
                break
        # Let the server finish: the rest is spoken, then stopped.
        await client.write_event(SynthesizeChunk(text="Rome.").event())
        await client.write_event(SynthesizeStop().event())
        while (event := await client.read_event()) is not None:
            if event.type == "synthesize-stopped":
                break
    return first


async def breakdown_rows(label: str, config: Path, runs: int) -> None:
    """The first piece after start, without and with the warm-up, then later."""
    collector = Breakdowns()
    logger = logging.getLogger("wyoming_services.kokoro.handler")
    logger.addHandler(collector)
    logger.setLevel(logging.INFO)
    try:
        rows: list[tuple[str, list[float], list[dict[str, float]]]] = []
        for warm_up in (False, True):
            service = uncached_service(config, warm_up=warm_up)
            try:
                async with tcp_server(service.handler_factory) as port:
                    first = [await first_piece(port)]
                    name = "first, warm-up" if warm_up else "first, no warm-up"
                    rows.append((name, first, collector.seen[-1:]))
                    if warm_up:
                        mark = len(collector.seen)
                        later = [await first_piece(port) for _ in range(runs)]
                        rows.append(("later", later, collector.seen[mark:]))
            finally:
                service.close()
    finally:
        logger.removeHandler(collector)
    for name, firsts, seen in rows:
        stages = " ".join(
            ms(statistics.median(b[stage] for b in seen)) for stage in STAGES
        )
        print(f"{label:<5} {name:<18} {ms(statistics.median(firsts))} {stages}")


# 1c. ONNX Runtime's session options ---------------------------------------


@dataclass(frozen=True)
class Variant:
    """A way to set up the session, by what it changes from ours."""

    name: str
    change: Callable[[rt.SessionOptions], None]


def _set(**values: object) -> Callable[[rt.SessionOptions], None]:
    def change(options: rt.SessionOptions) -> None:
        for key, value in values.items():
            setattr(options, key, value)

    return change


VARIANTS = (
    Variant("ours", _set()),
    Variant("ORT defaults", lambda options: None),
    Variant("intra-op 1", _set(intra_op_num_threads=1)),
    Variant(
        "no spinning",
        lambda options: options.add_session_config_entry(
            "session.intra_op.allow_spinning", "0"
        ),
    ),
    Variant("inter-op 2", _set(inter_op_num_threads=2)),
    Variant(
        "graph: basic",
        _set(graph_optimization_level=rt.GraphOptimizationLevel.ORT_ENABLE_BASIC),
    ),
    Variant("no memory arena", _set(enable_cpu_mem_arena=False)),
)


def variant_options(variant: Variant) -> rt.SessionOptions:
    """Our options with the variant's change ("ORT defaults": none of ours)."""
    options = (
        rt.SessionOptions() if variant.name == "ORT defaults" else session_options()
    )
    variant.change(options)
    return options


def options_rows(config: Path, runs: int) -> None:
    """Each variant's inference time, as a ratio of ours in the same run.

    The variants take turns, piece and sentence, so that the machine's load
    falls on all of them alike.
    """
    settings = load_config(config)
    engines: dict[str, KokoroEngine] = {}
    first_call: dict[str, float] = {}
    for variant in VARIANTS:
        kokoro, styles = load_kokoro(
            settings.kokoro.model,
            settings.kokoro.voices,
            settings.kokoro.providers,
            variant_options(variant),
        )
        voice = VoiceCatalog(styles, settings.voices).voices["en"]
        engines[variant.name] = KokoroEngine(
            kokoro, settings.kokoro.speed, PhraseCache(0)
        )
        first_call[variant.name] = (
            engines[variant.name].synthesise(FIRST_PIECE, voice).stages.inference
        )
    times: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in engines}
    try:
        for _ in range(runs):
            for name, engine in engines.items():
                piece, sentence = times[name]
                piece.append(engine.synthesise(FIRST_PIECE, voice).stages.inference)
                sentence.append(engine.synthesise(SENTENCE, voice).stages.inference)
    finally:
        for engine in engines.values():
            engine.close()
    ours = statistics.median(times["ours"][1])
    for name, (piece, sentence) in times.items():
        print(
            f"{name:<16} {ms(first_call[name])} {ms(statistics.median(piece))}"
            f" {ms(p95(piece))} {ms(statistics.median(sentence))}"
            f" {ms(p95(sentence))} {statistics.median(sentence) / ours:6.2f}"
        )


# 1d. Phrases spoken before -----------------------------------------------


async def announcement(port: int, text: str, streamed: bool) -> float:
    """Seconds from the end of the announcement's text to its first audio."""
    async with tcp_client(port) as client:
        client.read_timeout = SLOW
        if streamed:
            await client.write_event(SynthesizeStart(voice=VOICE).event())
            *words, last = text.split(" ")
            for word in words:
                await client.write_event(SynthesizeChunk(text=f"{word} ").event())
            started = time.perf_counter()
            await client.write_event(SynthesizeChunk(text=last).event())
        else:
            started = time.perf_counter()
            await client.write_event(Synthesize(text=text, voice=VOICE).event())
        while (event := await client.read_event()) is not None:
            if event.type == "audio-chunk":
                first = time.perf_counter() - started
                break
        if streamed:
            await client.write_event(SynthesizeStop().event())
        end = "synthesize-stopped" if streamed else "audio-stop"
        while (event := await client.read_event()) is not None and event.type != end:
            pass
    return first


async def cache_rows(label: str, config: Path, runs: int) -> None:
    """A cached announcement's first audio against one never spoken before."""
    service = build_service(load_config(config))
    try:
        speak_at_start(service.engine, service.voices, [ANNOUNCEMENT])
        async with tcp_server(service.handler_factory) as port:
            for streamed in (False, True):
                mode = "streaming" if streamed else "one-shot"
                cached = [
                    await announcement(port, ANNOUNCEMENT, streamed)
                    for _ in range(runs)
                ]
                fresh = [  # never spoken before: a number of its own each
                    await announcement(
                        port, f"{ANNOUNCEMENT[:-1]} {n + streamed * runs}.", streamed
                    )
                    for n in range(runs)
                ]
                print(
                    f"{label:<5} {mode:<10} {ms(statistics.median(cached))}"
                    f" {ms(p95(cached))} {ms(statistics.median(fresh))}"
                    f" {ms(p95(fresh))}"
                    f" {statistics.median(cached) / statistics.median(fresh):7.3f}"
                )
        print(f"{label:<5} cache now: {service.engine.cache.report()}")
    finally:
        service.close()


async def kokoro_sections(
    models: dict[str, Path], runs: int, real_runs: int, chars_per_second: float
) -> None:
    """Print the Kokoro sections for each model (`real_runs` of the real one)."""
    print(
        f"Kokoro: first audio for a four-sentence reply ({len(REPLY)} characters "
        f"written at {chars_per_second:g} characters/s; first clause "
        f"{len(FIRST_CLAUSE)} characters), ms; runs: tiny {runs}, real {real_runs}"
    )
    print(
        f"{'model':<5} {'mode':<10} {'first':>8} {'p95':>8} {'clause->':>8} {'p95':>8}"
        f" {'last':>8} {'RTF':>6} {'gaps':>8} {'longest':>8}"
    )
    for label, config in models.items():
        count = runs if label == "tiny" else real_runs
        await first_audio_rows(label, config, count, chars_per_second)
    if "real" not in models:
        print("real  not run: --skip-real, or not installed (scripts/setup)")
    print(
        "first: from the first character written; clause->: from the end of the "
        "first clause (goal: 600 ms); last: the end of the answer; RTF: one-shot "
        "synthesis time / audio length; gaps: median total and longest time the "
        "satellite's buffer ran dry after playback began"
    )

    print(
        '\nWhere the first piece\'s time goes (streamed "It is sunny" then a '
        "word), ms: first audio from the chunk, and per stage"
    )
    print(
        f"{'model':<5} {'request':<18} {'first':>8} {'phonemes':>8} {'style':>8}"
        f" {'ONNX':>8} {'writing':>8}"
    )
    for label, config in models.items():
        count = runs if label == "tiny" else real_runs
        await breakdown_rows(label, config, max(count, 2))

    print("\nA cached announcement's first audio, from its last chunk, ms (goal < 50)")
    print(
        f"{'model':<5} {'mode':<10} {'cached':>8} {'p95':>8} {'fresh':>8} {'p95':>8}"
        f" {'ratio':>7}"
    )
    for label, config in models.items():
        await cache_rows(label, config, runs if label == "tiny" else real_runs)

    if "real" in models:
        print(
            f"\nONNX Runtime session options, real model, {real_runs + 1} run(s) each "
            "taking turns, inference ms; ratio: the sentence's median over ours"
        )
        print(
            f"{'options':<16} {'1st call':>8} {'piece':>8} {'p95':>8} {'sentence':>8}"
            f" {'p95':>8} {'ratio':>6}"
        )
        options_rows(models["real"], real_runs + 1)
