"""End of speech to first reply audio with every engine real: `--real`.

scripts/develop's household, measured: whisper-server on the converted
Whisper base (`-ac 512`, as develop runs it) behind our relay
(`wyoming_services.whisper`), the agent on llama-server with
SmolLM2-135M-Instruct, and our Kokoro service on the real int8 model, all
from scripts/setup's caches. A satellite (tests/harness/satellite.py)
streams a question spoken by espeak-ng into Home Assistant's Assist
pipeline and fetches the spoken answer over HTTP, as ESPHome does. Each run
asks another question, so no answer comes from Home Assistant's TTS cache;
one warm-up run first per start of the services.

Stage times come from the pipeline's events (one clock, the satellite's) and
from what the engines report: the relay's log (whisper-server's response
time, and whether the transcript asked at a pause answered), llama-server's
`timings` in the conversation trace (prompt_n, cache_n, prompt_ms) and
Kokoro's log (its first audio).

Two tables. The first is the figure kept from before: no VAD, the recording
ends with the speech and is sent at once, timed from its end. The second is
what a household lives: the satellite streams the question in real time
and then silence, Home Assistant's own voice command segmenter ends the
command (default sensitivity, 0.7 s of silence, and aggressive, 0.25 s),
and the time runs from the end of speech, the last voiced sample of the
recording (found in the audio itself, tests/harness/satellite.py). It is
measured with the relay transcribing at pauses (on, its default) and
without (off): both relays run at once and the questions alternate, so the
machine's load falls on both alike.

Then benchmarks/voice_options.py: whisper-server's options for short
commands and SmolLM2's prompt speed, cold and from the prompt cache.
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
import dataclasses
from dataclasses import dataclass
from itertools import cycle, islice
import os
from pathlib import Path
import re
import subprocess
import tempfile
from typing import Any

import aiohttp
from homeassistant.components.assist_pipeline import PipelineEventType
from homeassistant.components.assist_pipeline.vad import VadSensitivity
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
from custom_components.desktop_assistant.text import words
from tests.harness.agent_entry import async_add_agent
from tests.harness.benchmark import last_turn_timings
from tests.harness.home_assistant import median_p95, running_home_assistant
from tests.harness.ports import free_port
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
from tests.harness.wyoming import module_argv, server_process
from wyoming_services.kokoro.handler import MIN_CLAUSE

# Enough questions that no reply repeats within a run of 3 runs per row.
QUESTIONS = [
    f"What is the capital of {country}?"
    for country in (
        "France", "Italy", "Spain", "Germany", "Japan", "Canada", "Portugal",
        "Greece", "Egypt", "Brazil", "Mexico", "Norway", "Sweden", "Poland",
        "Austria", "Ireland", "Peru", "Chile", "Kenya", "India", "China",
        "Turkey", "Cuba", "Finland",
    )
]  # fmt: skip
# Home Assistant's segmenter sensitivities measured: seconds of silence.
SEGMENTER = {
    "default": VadSensitivity.to_seconds(VadSensitivity.DEFAULT),
    "aggressive": VadSensitivity.to_seconds(VadSensitivity.AGGRESSIVE),
}
# The relay's option, as each start of the services sets it.
RELAY_OPTIONS = {
    "on": "transcribe_at_pause = true",
    "off": "transcribe_at_pause = false",
}
DEVELOP_AUDIO_CTX = 512  # what scripts/develop runs whisper-server with
HOUSEHOLD_GOAL = 1.2  # end of speech -> first audio, default sensitivity
# What the relay and Kokoro log per request (INFO, their default level).
RELAY_LINE = re.compile(r"whisper-server at \S+ (\d+) ms")
ASKED_LINE = re.compile(
    r"answered with the transcript asked (at a pause|at audio-stop)"
)
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

    vad_end: float  # the segmenter ended the command (0 without one)
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
    question: str = ""
    at_pause: bool = False  # the relay answered with the transcript asked at a pause


async def logged(log: Path, question: int, pattern: re.Pattern[str]) -> str:
    """What `log` said for the `question`th question (the pattern's group).

    Each engine logs once per question, after it answered: a line may still
    be on its way when the satellite has the audio, so wait for it.
    """
    for _ in range(LOG_WAITS):
        found = pattern.findall(
            await asyncio.to_thread(log.read_text, errors="replace")
        )
        if len(found) >= question:
            return found[question - 1]
        await asyncio.sleep(0.1)
    raise SystemExit(f"{log} has no {pattern.pattern!r} for question {question}")


async def reported(log: Path, question: int, pattern: re.Pattern[str]) -> float:
    """The milliseconds `log` gave for the `question`th question, in seconds."""
    return int(await logged(log, question, pattern)) / 1000


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


@dataclass
class Relay:
    """A relay the questions go through: its satellite, its log, what it heard."""

    satellite: Satellite
    log: Path
    asked: int = 0  # questions so far: lines its log has


async def measure(
    relay: Relay,
    wav: bytes,
    kokoro: tuple[Path, int],
    segmenter_silence: float | None = None,
) -> Sample:
    """The relay's next question through the pipeline; Kokoro's log and its count.

    With `segmenter_silence`, streamed as a satellite does, Home
    Assistant's segmenter ending the command; else sent at once.
    """
    relay.asked += 1
    satellite, question = relay.satellite, relay.asked
    run = await satellite.ask(wav, segmenter_silence=segmenter_silence)
    if "error" in run.types or run.first_audio_at is None:
        errors = run.of_type(PipelineEventType.ERROR)
        raise SystemExit(f"the pipeline failed: {errors or run.types}")
    end = run.speech_ended_at
    first_token, first_clause, answer = text_times(run)
    vad_end = run.of_type(PipelineEventType.STT_VAD_END)
    return Sample(
        vad_end=run.time_of(PipelineEventType.STT_VAD_END) - end if vad_end else 0.0,
        transcript=run.time_of(PipelineEventType.STT_END) - end,
        agent_start=run.time_of(PipelineEventType.INTENT_START) - end,
        first_token=first_token - end,
        first_clause=first_clause - end,
        first_audio=run.first_audio_at - end,
        whisper=await reported(relay.log, question, RELAY_LINE),
        timings=last_turn_timings(),
        kokoro=await reported(*kokoro, KOKORO_LINE),
        heard=run.one(PipelineEventType.STT_END)["stt_output"]["text"],
        answer=answer,
        streamed=any(delta.get("tts_start_streaming") for _, delta in run.deltas),
        at_pause=await logged(relay.log, question, ASKED_LINE) == "at a pause",
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


@dataclass
class Asker:
    """Asks the questions in turn, each once, through the relays' satellites."""

    kokoro_log: Path
    wavs: list[tuple[str, bytes]]
    spoken: int = 0  # answers Kokoro spoke: lines its log has

    async def ask(self, relay: Relay, segmenter_silence: float | None = None) -> Sample:
        """The next question; `segmenter_silence` as `measure` takes it."""
        self.spoken += 1
        text, wav = self.wavs.pop(0)
        sample = await measure(
            relay, wav, (self.kokoro_log, self.spoken), segmenter_silence
        )
        return dataclasses.replace(sample, question=text)


@contextlib.asynccontextmanager
async def relay_without_pauses(folder: Path, whisper_url: str) -> AsyncIterator[int]:
    """A second relay, transcribing at audio-stop only, as a process; its port."""
    config = folder / "relay-off.toml"
    await asyncio.to_thread(
        config.write_text,
        f'[whisper]\nurl = "{whisper_url}"\n{RELAY_OPTIONS["off"]}\n',
    )
    port = free_port()
    argv = module_argv(
        "wyoming_services.whisper",
        *("--uri", f"tcp://127.0.0.1:{port}", "--config", str(config)),
    )
    async with server_process(argv, port, folder / "whisper-off.log"):
        yield port


async def run_questions(
    folder: Path, whisper_url: str, llama: RealLlamaServer, runs: int
) -> None:
    """Each way of asking, `runs` times, through Home Assistant and the services.

    Both relays run at once, one transcribing at pauses and one not, each
    with a satellite of its own, and the questions alternate between them,
    so that what else the machine does falls on both alike. Then SmolLM2's
    prompt, cold and cached, through the same agent.
    """
    kokoro = real_kokoro_dir()
    if kokoro is None:
        raise pytest.skip.Exception(MISSING_KOKORO)
    kokoro_config = (
        f'[kokoro]\nmodel = "{kokoro / KOKORO_MODEL}"\n'
        f'voices = "{kokoro / KOKORO_VOICES}"\n{REAL_KOKORO_VOICES}'
    )
    count = len(RELAY_OPTIONS) * (1 + runs * len(SEGMENTER)) + runs
    asker = Asker(
        folder / "kokoro.log",
        [(q, spoken_wav(q)) for q in islice(cycle(QUESTIONS), count)],
    )
    spoken: dict[tuple[str, str], list[Sample]] = {}
    services = wyoming_services(folder, whisper_url, kokoro_config, RELAY_OPTIONS["on"])
    async with (
        running_home_assistant() as hass,
        aiohttp.ClientSession() as session,
        services as (stt_on, tts, _),
        relay_without_pauses(folder, whisper_url) as stt_off,
    ):
        agent_id = await add_smollm2_agent(hass, llama)
        relays = {
            "on": Relay(
                await assemble(hass, agent_id, session, stt_on, tts),
                folder / "whisper.log",
            ),
            "off": Relay(
                await assemble(hass, agent_id, session, stt_off, tts),
                folder / "whisper-off.log",
            ),
        }
        for relay in relays.values():
            await asker.ask(relay)  # warm-up
        before = uptime()
        today = [await asker.ask(relays["on"]) for _ in range(runs)]
        for _ in range(runs):
            for name, silence in SEGMENTER.items():
                for option, relay in relays.items():
                    sample = await asker.ask(relay, silence)
                    spoken.setdefault((name, option), []).append(sample)
        loads = (before, uptime())
        print_table(today, loads)
        print_household_table(spoken, loads)
        await voice_options.prompt_cache_table(hass, agent_id, llama, runs)


def print_household_table(
    spoken: dict[tuple[str, str], list[Sample]], loads: tuple[str, str]
) -> None:
    """From the end of speech, as a satellite streams: each sensitivity and option."""
    runs = len(next(iter(spoken.values())))
    print(
        "\nVoice pipeline as a household lives it: end of speech (the last voiced "
        f"sample) -> first reply audio, streamed in real time, Home Assistant's "
        f"segmenter ending the command ({runs} runs per row, ms; medians from the "
        "end of speech)"
    )
    print(f"machine before: {loads[0]}; after: {loads[1]}")
    print(
        f"{'segmenter':<17} {'relay':<5} {'VAD end':>8} {'transcr.':>8} "
        f"{'1st tok.':>8} {'clause':>8} {'TOTAL':>8} {'p95':>8} {'vs off':>6} "
        f"{'at pause':>8} {'heard right':>11}"
    )
    for (name, relay), samples in spoken.items():
        total, p95 = median_p95([s.first_audio for s in samples])
        off, _ = median_p95([s.first_audio for s in spoken[name, "off"]])
        stages = [
            median_p95([getattr(s, stage) for s in samples])[0] * 1000
            for stage in ("vad_end", "transcript", "first_token", "first_clause")
        ]
        right = sum(words(s.heard) == words(s.question) for s in samples)
        print(
            f"{f'{name} {SEGMENTER[name]:g} s':<17} {relay:<5} "
            + " ".join(f"{stage:8.0f}" for stage in stages)
            + f" {total * 1000:8.0f} {p95 * 1000:8.0f} {total / off:6.2f} "
            f"{sum(s.at_pause for s in samples):>4} of {len(samples):<1} "
            f"{right:>6} of {len(samples)}"
        )
    default, _ = median_p95([s.first_audio for s in spoken["default", "on"]])
    verdict = "met" if default <= HOUSEHOLD_GOAL else "not met"
    print(
        f"goal: default sensitivity, relay on, <= {HOUSEHOLD_GOAL * 1000:.0f} ms "
        f"median on a quiet 2-core machine: {verdict} here"
    )
    misheard = {
        s.heard for samples in spoken.values() for s in samples
        if words(s.heard) != words(s.question)
    }  # fmt: skip
    if misheard:
        print(f"misheard: {' | '.join(sorted(misheard))}")


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
        "\nVoice pipeline, every engine real: end of the recording (sent at once, "
        f"no VAD) -> first reply audio byte ({len(samples)} runs, ms)"
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


async def main(runs: int, audio_ctx: int = DEVELOP_AUDIO_CTX) -> None:
    """The end-to-end tables, then the engines' option tables.

    `audio_ctx`: whisper-server's `-ac` (0: the whole 30 s window).
    """
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        try:
            model = cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
            with contextlib.ExitStack() as engines:
                whisper = engines.enter_context(
                    start_whisper_server(folder, "-ac", str(audio_ctx))
                )
                print(f"whisper-server -ac {audio_ctx} (0: the full audio context)")
                llama = engines.enter_context(
                    start_llama_server(
                        folder, "--ctx-size", "4096", "--cache-ram", "0", model=model
                    )
                )
                await run_questions(folder, whisper.url, llama, runs)
            await voice_options.whisper_table(folder, runs)
        except (pytest.skip.Exception, subprocess.CalledProcessError) as missing:
            print(f"real engines: not installed: {getattr(missing, 'msg', missing)}")
