"""End of speech to first reply audio, through the whole voice pipeline.

A real Home Assistant runs in this process with its `wyoming` integration,
an Assist pipeline and this repository's agent. Our two Wyoming services run
as their own processes, as deployed (`python -m wyoming_services.whisper`
and `python -m wyoming_services.kokoro`). A satellite (tests/voice) streams
a 1.5 s utterance into the pipeline and fetches the reply from Home
Assistant's web server over HTTP, as ESPHome's `voice_assistant` does.

The engines' own time is held fixed:

- whisper-server: the stand-in (tests/wyoming) answers `--whisper-ms` after
  the request;
- llama-server: the stand-in (tests/llama_server.py) sends its first token
  `--llama-ms` after the request, the rest of the reply at once;
- Kokoro: the tiny model of scripts/make-test-models (no real weights on
  this machine). Its synthesis of the reply's first sentence is timed on its
  own (the same engine, called directly) and subtracted, so it counts as
  engine time, not ours.

Measured per run: end of speech (the satellite's last audio chunk taken by
the pipeline) -> the first reply audio byte past the WAV header at the
satellite. Added by our code (and Home Assistant's) = that total minus
whisper's and llama's fixed delays and Kokoro's median synthesis time.
Target: under 50 ms added.

Two replies: a long one (over 60 characters, so Home Assistant streams it
into Kokoro while the agent writes) and a short one (spoken after the agent
ends). No VAD: end of speech is the end of the recording.

Run: scripts/bench voice_pipeline [--runs 50]
"""

import argparse
import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass
from pathlib import Path
import subprocess
import sys
import tempfile
import time

import aiohttp
from homeassistant.components.assist_pipeline import PipelineEventType
from homeassistant.const import (
    CONF_LLM_HASS_API,
    CONF_MODEL,
    EVENT_HOMEASSISTANT_START,
)
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from wyoming.tts import SynthesizeVoice

from benchmarks.harness import median_p95, running_home_assistant
from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from tests.agent_entry import async_add_agent
from tests.llama_server import MODEL_ID, LlamaServerStandIn, serve, text_reply
from tests.ports import free_port
from tests.voice.satellite import Run, Satellite, create_pipeline, utterance_wav
from tests.wyoming.conftest import write_kokoro_config
from tests.wyoming.helpers import KOKORO_VOICES, module_argv, server_process
from tests.wyoming.test_ha_wyoming import add_wyoming_entry, entity_id_of
from tests.wyoming.whisper_server import WhisperServerStandIn, serve as serve_whisper
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import build_service

REPO = Path(__file__).parents[1]
VOICE = "en"
WARM_UP = 3
KOKORO_TIMINGS = 30
# Token by token, as llama-server streams; the first sentence is 64 characters.
LONG_REPLY = (
    "It is sunny in Rome today, eighteen degrees with a light breeze. "
    "Do you want tomorrow's forecast too?"
)
SHORT_REPLY = "Sunny in Rome, eighteen degrees."
WEATHER_TOOL = """\
description = "Current weather for a place."
command = ["echo", "sunny"]
announce.en = ["Checking the weather."]

[params.place]
type = "string"
description = "City name"
"""


@dataclass
class Sample:
    """One run's times, in seconds from end of speech."""

    transcript: float  # stt-end
    llama_request: float  # the llama-server stand-in received the request
    first_token: float  # ...and sent its first byte
    first_audio: float  # the satellite received reply audio


def tokens(text: str) -> list[str]:
    """The reply as a model streams it: a word (with its space) per event."""
    words = text.split(" ")
    return [word + " " for word in words[:-1]] + [words[-1]]


def first_sentence(text: str) -> str:
    """What Kokoro speaks first."""
    return text.split(". ", maxsplit=1)[0] + "." if ". " in text else text


@contextlib.asynccontextmanager
async def wyoming_services(
    folder: Path, whisper_url: str
) -> AsyncIterator[tuple[int, int, Path]]:
    """Both services as processes; yield their ports and the config file."""
    models = folder / "models"
    await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(REPO / "scripts" / "make-test-models"), str(models)],
        check=True,
    )
    config = write_kokoro_config(
        folder, models, KOKORO_VOICES + f'\n[whisper]\nurl = "{whisper_url}"\n'
    )
    whisper_port, kokoro_port = free_port(), free_port()
    async with (
        server_process(
            module_argv(
                "wyoming_services.whisper",
                "--uri",
                f"tcp://127.0.0.1:{whisper_port}",
                "--config",
                str(config),
            ),
            whisper_port,
            folder / "whisper.log",
        ),
        server_process(
            module_argv(
                "wyoming_services.kokoro",
                "--uri",
                f"tcp://127.0.0.1:{kokoro_port}",
                "--config",
                str(config),
            ),
            kokoro_port,
            folder / "kokoro.log",
        ),
    ):
        yield whisper_port, kokoro_port, config


async def kokoro_synthesis(config: Path, sentence: str) -> list[float]:
    """Seconds Kokoro itself takes to speak `sentence`, called directly."""
    service = build_service(load_config(config))
    try:
        voice = service.voices.resolve(SynthesizeVoice(name=VOICE))
        times = []
        for _ in range(KOKORO_TIMINGS):
            started = time.perf_counter()
            await service.engine.speak(sentence, voice, None)
            times.append(time.perf_counter() - started)
        return times
    finally:
        service.close()


async def measure(
    satellite: Satellite, llama: LlamaServerStandIn, reply: str, delay: float
) -> Sample:
    """One run with the llama-server stand-in answering `reply`."""
    llama.script = [text_reply(*tokens(reply), delay=delay)]
    llama.received_at.clear()
    llama.stream_times.clear()
    run: Run = await satellite.ask(utterance_wav())
    if "error" in run.types or run.first_audio_at is None:
        raise SystemExit(f"the pipeline failed: {run.types}, audio {run.audio_status}")
    end = run.speech_ended_at
    (received,) = llama.received_at
    ((first_byte, _),) = llama.stream_times
    return Sample(
        transcript=run.time_of(PipelineEventType.STT_END) - end,
        llama_request=received - end,
        first_token=first_byte - end,
        first_audio=run.first_audio_at - end,
    )


def ms(seconds: float) -> str:
    """Seconds as a right-aligned millisecond column."""
    return f"{seconds * 1000:9.1f}"


def print_table(
    results: dict[str, tuple[list[Sample], list[float]]],
    whisper_delay: float,
    llama_delay: float,
) -> None:
    """Print the steps of each reply, its total and what we add to the engines."""
    runs = len(next(iter(results.values()))[0])
    print(f"Voice pipeline: end of speech -> first reply audio byte ({runs} runs, ms)")
    print(
        f"engines held fixed: whisper-server {whisper_delay * 1000:.0f}, "
        f"llama-server first token {llama_delay * 1000:.0f}, Kokoro tiny model "
        "first sentence (timed directly, median)"
    )
    print(f"{'reply':<6} {'step':<42} {'median':>9} {'p95':>9} {'engine':>9}")
    for name, (samples, kokoro) in results.items():
        kokoro_median, _ = median_p95(kokoro)
        engines = whisper_delay + llama_delay + kokoro_median
        steps = [
            (
                "end of speech -> transcript (stt-end)",
                [s.transcript for s in samples],
                whisper_delay,
            ),
            (
                "transcript -> llama-server request",
                [s.llama_request - s.transcript for s in samples],
                0.0,
            ),
            (
                "llama-server request -> first token",
                [s.first_token - s.llama_request for s in samples],
                llama_delay,
            ),
            (
                "first token -> first audio at satellite",
                [s.first_audio - s.first_token for s in samples],
                kokoro_median,
            ),
            (
                "TOTAL end of speech -> first audio",
                [s.first_audio for s in samples],
                engines,
            ),
            (
                "ADDED: total - engines (target < 50)",
                [s.first_audio - engines for s in samples],
                0.0,
            ),
        ]
        for step, values, engine in steps:
            median, p95 = median_p95(values)
            print(f"{name:<6} {step:<42} {ms(median)} {ms(p95)} {ms(engine)}")


async def main(runs: int, whisper_delay: float, llama_delay: float) -> None:
    """Assemble the pipeline, run each reply `runs` times, print the table."""
    with tempfile.TemporaryDirectory() as folder:
        async with (
            running_home_assistant() as hass,
            serve_whisper(WhisperServerStandIn(delay=whisper_delay)) as whisper,
            serve(LlamaServerStandIn()) as llama,
            wyoming_services(Path(folder), whisper.url) as (stt, tts, config),
            aiohttp.ClientSession() as session,
        ):
            whisper.speech = " What's the weather in Rome?"
            whisper.spoken_language = "en"
            satellite = await assemble(hass, llama, session, stt, tts)
            results: dict[str, tuple[list[Sample], list[float]]] = {}
            for name, reply in (("long", LONG_REPLY), ("short", SHORT_REPLY)):
                for _ in range(WARM_UP):
                    await measure(satellite, llama, reply, llama_delay)
                samples = [
                    await measure(satellite, llama, reply, llama_delay)
                    for _ in range(runs)
                ]
                kokoro = await kokoro_synthesis(config, first_sentence(reply))
                results[name] = (samples, kokoro)
    print_table(results, whisper_delay, llama_delay)


async def assemble(
    hass: HomeAssistant,
    llama: LlamaServerStandIn,
    session: aiohttp.ClientSession,
    stt_port: int,
    tts_port: int,
) -> Satellite:
    """The agent with a tool file, both Wyoming entries, a pipeline, a satellite."""
    tools = Path(hass.config.path(DOMAIN, "tools"))
    await asyncio.to_thread(tools.mkdir, parents=True)
    await asyncio.to_thread((tools / "weather.toml").write_text, WEATHER_TOOL)
    _, agent_id = await async_add_agent(
        hass,
        llama.url,
        DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]},
    )
    assert await async_setup_component(hass, "assist_pipeline", {})
    stt_entry = await add_wyoming_entry(hass, stt_port)
    tts_entry = await add_wyoming_entry(hass, tts_port)
    pipeline_id = await create_pipeline(
        hass,
        agent_id,
        entity_id_of(hass, stt_entry, "stt"),
        entity_id_of(hass, tts_entry, "tts"),
        VOICE,
    )
    # Home Assistant starts serving HTTP once it has started.
    hass.bus.async_fire(EVENT_HOMEASSISTANT_START)
    await hass.async_block_till_done()
    base = f"http://127.0.0.1:{hass.http.server_port}"
    return Satellite(hass, pipeline_id, lambda path: session.get(base + path))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--whisper-ms", type=float, default=100)
    parser.add_argument("--llama-ms", type=float, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.whisper_ms / 1000, args.llama_ms / 1000))
