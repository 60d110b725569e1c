"""End of speech to first reply audio with every engine real: `--real`.

scripts/develop's household, measured: whisper-server on the converted
Whisper base (`-ac 512`, as develop runs it) behind our relay
(`wyoming_services.whisper`), the agent on llama-server with
SmolLM2-135M-Instruct, and our Kokoro service on the real int8 model, all
from scripts/setup's caches. A satellite (tests/harness/satellite.py)
streams a question spoken by espeak-ng into Home Assistant's Assist
pipeline and fetches the spoken answer over HTTP, as ESPHome does. Each run
asks another question, so no answer comes from Home Assistant's TTS cache;
one warm-up run first.

Stage times come from the pipeline's events (one clock, the satellite's) and
from what the engines report: the relay's log (whisper-server's response
time), llama-server's `timings` in the conversation trace (prompt_n,
cache_n, prompt_ms) and Kokoro's log (its first audio). No VAD: end of
speech is the end of the recording.

Then benchmarks/voice_options.py: whisper-server's options for short
commands and SmolLM2's prompt speed, cold and from the prompt cache.
"""

import asyncio
import contextlib
from dataclasses import dataclass
import os
from pathlib import Path
import re
import subprocess
import tempfile
from typing import Any

import aiohttp
from homeassistant.components.assist_pipeline import PipelineEventType
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL, EVENT_HOMEASSISTANT_START
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest

from benchmarks import voice_options
from benchmarks.voice_pipeline import assemble, wyoming_services
from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    DEFAULT_AGENT_OPTIONS,
)
from tests.harness.agent_entry import async_add_agent
from tests.harness.benchmark import last_turn_timings
from tests.harness.home_assistant import median_p95, running_home_assistant
from tests.harness.real_engines import (
    KOKORO_MODEL,
    KOKORO_VOICES,
    MISSING_KOKORO,
    MISSING_SMOLLM2,
    REAL_KOKORO_VOICES,
    SMOLLM2_MODEL,
    RealLlamaServer,
    cached_model,
    real_kokoro_dir,
    start_llama_server,
    start_whisper_server,
)
from tests.harness.satellite import Run, Satellite, spoken_wav
from wyoming_services.kokoro.handler import MIN_CLAUSE

QUESTIONS = [
    f"What is the capital of {country}?"
    for country in ("France", "Italy", "Spain", "Germany", "Japan", "Canada")
]
# What the relay and Kokoro log per request (INFO, their default level).
RELAY_LINE = re.compile(r"whisper-server at \S+ (\d+) ms")
KOKORO_LINE = re.compile(r"first audio after (\d+) ms")
# A clause Kokoro may speak first: punctuation that ends a clause, with at
# least MIN_CLAUSE characters before it (as voice_pipeline.first_spoken finds it).
CLAUSE_END = re.compile(r"[,;:.!?](\s|$)")
GOAL = 2.0
# Tenths of a second to wait for an engine's log line.
LOG_WAITS = 100


@dataclass
class Sample:
    """One run: seconds from end of speech, and what the engines reported."""

    transcript: float  # stt-end
    agent_start: float  # intent-start
    first_token: float  # the first content the agent streamed
    first_clause: float  # what Kokoro speaks first is written
    first_audio: float  # the satellite received reply audio
    whisper: float  # whisper-server's response, as the relay timed it
    timings: dict[str, Any]  # llama-server's, of the turn's first request
    kokoro: float  # Kokoro's own time to its first audio
    heard: str
    answer: str
    streamed: bool  # Home Assistant streamed the reply into Kokoro


async def reported(log: Path, pattern: re.Pattern[str], question: int) -> float:
    """The number that `log` gave for the `question`th question, in seconds.

    Each engine logs once per question, after it answered: a line may still
    be on its way when the satellite has the audio, so wait for it.
    """
    for _ in range(LOG_WAITS):
        found = pattern.findall(
            await asyncio.to_thread(log.read_text, errors="replace")
        )
        if len(found) >= question:
            return int(found[question - 1]) / 1000
        await asyncio.sleep(0.1)
    raise SystemExit(f"{log} has no {pattern.pattern!r} for question {question}")


def text_times(run: Run) -> tuple[float, float, str]:
    """When the first content streamed, the first clause was written, and the reply.

    The first clause's time is the reply's end when Home Assistant does not
    stream the reply into Kokoro (60 characters or fewer).
    """
    written, first_token, clause_at = "", None, None
    for at, delta in run.deltas:
        content = delta.get("chat_log_delta", {}).get("content")
        if not content:
            continue
        written += content
        first_token = first_token or at
        if clause_at is None and CLAUSE_END.search(written, MIN_CLAUSE - 1):
            clause_at = at
    streamed = any(delta.get("tts_start_streaming") for _, delta in run.deltas)
    if not streamed or clause_at is None:
        clause_at = run.time_of(PipelineEventType.INTENT_END)
    if first_token is None:
        raise SystemExit("the agent streamed no text")
    return first_token, clause_at, written


async def measure(
    satellite: Satellite, wav: bytes, logs: Path, question: int
) -> Sample:
    """The `question`th question through the pipeline."""
    run = await satellite.ask(wav)
    if "error" in run.types or run.first_audio_at is None:
        errors = run.of_type(PipelineEventType.ERROR)
        raise SystemExit(f"the pipeline failed: {errors or run.types}")
    end = run.speech_ended_at
    first_token, first_clause, answer = text_times(run)
    return Sample(
        transcript=run.time_of(PipelineEventType.STT_END) - end,
        agent_start=run.time_of(PipelineEventType.INTENT_START) - end,
        first_token=first_token - end,
        first_clause=first_clause - end,
        first_audio=run.first_audio_at - end,
        whisper=await reported(logs / "whisper.log", RELAY_LINE, question),
        timings=last_turn_timings(),
        kokoro=await reported(logs / "kokoro.log", KOKORO_LINE, question),
        heard=run.one(PipelineEventType.STT_END)["stt_output"]["text"],
        answer=answer,
        streamed=any(delta.get("tts_start_streaming") for _, delta in run.deltas),
    )


async def add_smollm2_agent(hass: HomeAssistant, llama: RealLlamaServer) -> str:
    """The agent as the real-household test has it: plain, steady, short."""
    _, agent_id = await async_add_agent(
        hass,
        llama.url,
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: str(llama.model_path),
            # SmolLM2's template cannot render tools.
            CONF_LLM_HASS_API: [],
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: 48,
        },
    )
    assert await async_setup_component(hass, "assist_pipeline", {})
    hass.bus.async_fire(EVENT_HOMEASSISTANT_START)
    await hass.async_block_till_done()
    return agent_id


async def run_questions(
    folder: Path, whisper_url: str, llama: RealLlamaServer, runs: int
) -> None:
    """A warm-up and `runs` questions through Home Assistant and the services.

    Then SmolLM2's prompt, cold and cached, through the same agent.
    """
    kokoro = real_kokoro_dir()
    if kokoro is None:
        raise pytest.skip.Exception(MISSING_KOKORO)
    kokoro_config = (
        f'[kokoro]\nmodel = "{kokoro / KOKORO_MODEL}"\n'
        f'voices = "{kokoro / KOKORO_VOICES}"\n{REAL_KOKORO_VOICES}'
    )
    wavs = [spoken_wav(question) for question in QUESTIONS]
    async with (
        running_home_assistant() as hass,
        aiohttp.ClientSession() as session,
        wyoming_services(folder, whisper_url, kokoro_config) as (stt, tts, _),
    ):
        agent_id = await add_smollm2_agent(hass, llama)
        satellite = await assemble(hass, agent_id, session, stt, tts)
        await measure(satellite, wavs[-1], folder, 1)
        before = uptime()
        samples = [
            await measure(satellite, wavs[run % (len(wavs) - 1)], folder, run + 2)
            for run in range(runs)
        ]
        print_table(samples, (before, uptime()))
        await voice_options.prompt_cache_table(hass, agent_id, llama, runs)


def uptime() -> str:
    """The load averages, as `uptime` shows them."""
    return "load average " + ", ".join(f"{load:.2f}" for load in os.getloadavg())


def stage_rows(samples: list[Sample]) -> list[tuple[str, list[float], list[float]]]:
    """Each stage: its name, its times, and the engine's own times for it."""
    return [
        ("VAD end (none: recording ends with the speech)", [0.0] * len(samples), []),
        (
            "end of audio -> transcript (stt-end)",
            [s.transcript for s in samples],
            [s.whisper for s in samples],
        ),
        (
            "transcript -> agent start (intent-start)",
            [s.agent_start - s.transcript for s in samples],
            [],
        ),
        (
            "agent start -> first token",
            [s.first_token - s.agent_start for s in samples],
            [s.timings["prompt_ms"] / 1000 for s in samples],
        ),
        (
            "first token -> first clause (reply end if short)",
            [s.first_clause - s.first_token for s in samples],
            [s.timings["predicted_ms"] / 1000 for s in samples],
        ),
        (
            "first clause -> first audio at satellite",
            [s.first_audio - s.first_clause for s in samples],
            [s.kokoro for s in samples],
        ),
    ]


def print_table(samples: list[Sample], loads: tuple[str, str]) -> None:
    """The stages with their share of the total, and the engines' reports."""
    totals = [s.first_audio for s in samples]
    total, total_p95 = median_p95(totals)
    print(
        f"\nVoice pipeline, every engine real: end of speech -> first reply audio "
        f"byte ({len(samples)} runs, ms)"
    )
    print(f"machine before: {loads[0]}; after: {loads[1]}")
    print(
        f"{'stage':<48} {'median':>8} {'p95':>8} {'share':>6} {'engine':>8}  "
        "engine's own figure"
    )
    sources = [
        "",
        "whisper-server response (relay log)",
        "",
        "llama-server prompt_ms (prompt processing)",
        "llama-server predicted_ms (the whole reply)",
        "Kokoro first audio (its log)",
    ]
    for (name, values, engine), source in zip(
        stage_rows(samples), sources, strict=True
    ):
        median, p95 = median_p95(values)
        own = f"{median_p95(engine)[0] * 1000:8.0f}" if engine else f"{'':>8}"
        print(
            f"{name:<48} {median * 1000:8.0f} {p95 * 1000:8.0f} "
            f"{median / total:6.0%} {own}  {source}"
        )
    verdict = "met" if total <= GOAL else "not met"
    print(
        f"{'TOTAL end of speech -> first audio':<48} {total * 1000:8.0f} "
        f"{total_p95 * 1000:8.0f} {'100%':>6}  goal <= {GOAL * 1000:.0f}: {verdict}"
    )
    prompt = samples[0].timings
    print(
        f"prompt: {prompt['prompt_n'] + prompt['cache_n']} tokens, "
        f"median {median_p95([s.timings['cache_n'] for s in samples])[0]:.0f} "
        "from llama-server's cache"
    )
    print(f"heard: {samples[0].heard!r}; answered: {samples[0].answer!r}")
    streamed = sum(s.streamed for s in samples)
    print(f"replies streamed into Kokoro as written: {streamed} of {len(samples)}")


async def main(runs: int) -> None:
    """The end-to-end table, then the engines' option tables."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        try:
            model = cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
            with contextlib.ExitStack() as engines:
                whisper = engines.enter_context(
                    start_whisper_server(folder, "-ac", "512")
                )
                llama = engines.enter_context(
                    start_llama_server(
                        folder, "--ctx-size", "4096", "--cache-ram", "0", model=model
                    )
                )
                await run_questions(folder, whisper.url, llama, runs)
            await voice_options.whisper_table(folder, runs)
        except (pytest.skip.Exception, subprocess.CalledProcessError) as missing:
            print(f"real engines: not installed: {getattr(missing, 'msg', missing)}")
