"""End of speech to first reply audio, through the whole voice pipeline.

A real Home Assistant runs in this process with its `wyoming` integration,
an Assist pipeline and this repository's agent. Our two Wyoming services run
as their own processes, as deployed (`python -m wyoming_services.whisper`
and `python -m wyoming_services.kokoro`). A satellite (tests/harness/satellite.py) streams
a 1.5 s utterance into the pipeline and fetches the reply from Home
Assistant's web server over HTTP, as ESPHome's `voice_assistant` does.

The engines' own time is held fixed:

- whisper-server: the stand-in (tests/harness/whisper_server.py) answers `--whisper-ms` after
  the request;
- llama-server: the stand-in (tests/harness/llama_server.py) sends its first token
  `--llama-ms` after the request, the rest of the reply at once;
- Kokoro: the tiny model of scripts/make-test-models, then the real Kokoro
  v1.0 int8 model that scripts/setup assembles (when installed). Its
  synthesis of what it speaks first (the reply's first clause: Kokoro speaks
  a clause while it has nothing else to do) is timed on its own (the same
  engine, called directly) and subtracted, so it counts as engine time, not
  ours.

Measured per run: end of speech (the satellite's last audio chunk taken by
the pipeline) -> the first reply audio byte past the WAV header at the
satellite. Added by our code (and Home Assistant's) = that total minus
whisper's and llama's fixed delays and Kokoro's median synthesis time.
Target: under 50 ms added.

Two replies: a long one (over 60 characters, so Home Assistant streams it
into Kokoro while the agent writes) and a short one (spoken after the agent
ends). No VAD: end of speech is the end of the recording.

The real model is slow on a small machine: it gets a tenth of the runs (at
least one) and one warm-up. The short reply is the same text every run:
after the warm-up Home Assistant's TTS cache answers it, so its last step
measures the cache, not Kokoro.

With `--real`, every engine is real instead (benchmarks/voice_real.py):
scripts/develop's household, with each stage's share, then from the end of
speech as a satellite streams it (Home Assistant's segmenter, default and
aggressive; the relay transcribing at pauses and not), then the engines'
options (benchmarks/voice_options.py); 3 runs unless --runs says otherwise.

Run: scripts/bench voice_pipeline [--runs 50] [--skip-real]
     | --real [--runs 3] [--audio-ctx 512]
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass
from pathlib import Path
import re
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

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from tests.harness.agent_entry import async_add_agent
from tests.harness.benchmark import command_line
from tests.harness.home_assistant import median_p95, running_home_assistant
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn, serve, text_reply
from tests.harness.ports import free_port
from tests.harness.real_engines import (
    KOKORO_MODEL,
    KOKORO_VOICES as REAL_VOICES_FILE,
    REAL_KOKORO_VOICES,
    real_kokoro_dir,
)
from tests.harness.satellite import Run, Satellite, create_pipeline, utterance_wav
from tests.harness.whisper_server import WhisperServerStandIn, serve as serve_whisper
from tests.harness.wyoming import (
    KOKORO_VOICES,
    add_wyoming_entry,
    entity_id_of,
    module_argv,
    server_process,
)
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import build_service
from wyoming_services.kokoro.handler import MIN_CLAUSE

REPO = Path(__file__).parents[1]
VOICE = "en"
WARM_UP = 3
STAND_IN_RUNS = 50
# About 5 minutes on 2 cores with every engine real (engines, options tables).
REAL_RUNS = 3
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


def first_spoken(text: str) -> str:
    """What Kokoro speaks first: the first clause long enough, or sentence."""
    match = re.compile(r"[,;:.!?](\s|$)").search(text, MIN_CLAUSE - 1)
    return text[: match.start() + 1] if match else text


async def kokoro_configs(folder: Path, skip_real: bool) -> dict[str, str]:
    """The [kokoro] tables (and voices) of each model to run: tiny, real."""
    tiny = folder / "models"
    await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(REPO / "scripts" / "make-test-models"), str(tiny)],
        check=True,
    )
    configs = {
        "tiny": f'[kokoro]\nmodel = "{tiny / "kokoro-v1.0.onnx"}"\n'
        f'voices = "{tiny / "voices-v1.0.bin"}"\n{KOKORO_VOICES}'
    }
    real = None if skip_real else real_kokoro_dir()
    if real is not None:
        configs["real"] = (
            f'[kokoro]\nmodel = "{real / KOKORO_MODEL}"\n'
            f'voices = "{real / REAL_VOICES_FILE}"\n{REAL_KOKORO_VOICES}'
        )
    return configs


@contextlib.asynccontextmanager
async def wyoming_services(
    folder: Path, whisper_url: str, kokoro: str, whisper_options: str = ""
) -> AsyncIterator[tuple[int, int, Path]]:
    """Both services as processes; yield their ports and the config file.

    `whisper_options`: more lines of the relay's `[whisper]` table.
    """
    config = folder / "services.toml"
    await asyncio.to_thread(
        config.write_text,
        f'{kokoro}\n[whisper]\nurl = "{whisper_url}"\n{whisper_options}\n',
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


async def kokoro_synthesis(config: Path, sentence: str, timings: int) -> list[float]:
    """Seconds Kokoro itself takes to speak `sentence`, called directly."""
    service = build_service(load_config(config))
    try:
        voice = service.voices.resolve(SynthesizeVoice(name=VOICE))
        times = []
        for _ in range(timings):
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


# Long: one printed table, a column per step of a reply.
def print_table(
    model: str,
    results: dict[str, tuple[list[Sample], list[float]]],
    whisper_delay: float,
    llama_delay: float,
) -> None:
    """Print the steps of each reply, its total and what we add to the engines."""
    runs = len(next(iter(results.values()))[0])
    print(
        f"\nVoice pipeline, Kokoro {model} model: end of speech -> first reply "
        f"audio byte ({runs} runs, ms)"
    )
    print(
        f"engines held fixed: whisper-server {whisper_delay * 1000:.0f}, "
        f"llama-server first token {llama_delay * 1000:.0f}, Kokoro {model} model "
        "first clause (timed directly, median)"
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


async def main(
    runs: int, whisper_delay: float, llama_delay: float, skip_real: bool
) -> None:
    """Run each reply `runs` times per Kokoro model; print the tables.

    One Home Assistant and agent (a second one in the process would not set
    up); per model fresh services, Wyoming entries and pipeline.
    """
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        configs = await kokoro_configs(folder, skip_real)
        async with (
            running_home_assistant() as hass,
            serve_whisper(WhisperServerStandIn(delay=whisper_delay)) as whisper,
            serve(LlamaServerStandIn()) as llama,
            aiohttp.ClientSession() as session,
        ):
            whisper.speech = " What's the weather in Rome?"
            whisper.spoken_language = "en"
            agent_id = await add_agent(hass, llama)
            for model, kokoro in configs.items():
                real = model == "real"
                async with wyoming_services(folder, whisper.url, kokoro) as services:
                    stt, tts, config = services
                    satellite = await assemble(hass, agent_id, session, stt, tts)
                    results = await run_replies(
                        satellite,
                        llama,
                        config,
                        runs=max(1, runs // 10) if real else runs,
                        warm_up=1 if real else WARM_UP,
                        kokoro_timings=3 if real else KOKORO_TIMINGS,
                        llama_delay=llama_delay,
                    )
                print_table(model, results, whisper_delay, llama_delay)
        if "real" not in configs:
            print("\nKokoro real model: not run (--skip-real, or not installed)")


async def run_replies(
    satellite: Satellite,
    llama: LlamaServerStandIn,
    config: Path,
    *,
    runs: int,
    warm_up: int,
    kokoro_timings: int,
    llama_delay: float,
) -> dict[str, tuple[list[Sample], list[float]]]:
    """Each reply through the pipeline, and Kokoro's own time for it."""
    results: dict[str, tuple[list[Sample], list[float]]] = {}
    for name, reply in (("long", LONG_REPLY), ("short", SHORT_REPLY)):
        for _ in range(warm_up):
            await measure(satellite, llama, reply, llama_delay)
        samples = [
            await measure(satellite, llama, reply, llama_delay) for _ in range(runs)
        ]
        kokoro_times = await kokoro_synthesis(
            config, first_spoken(reply), kokoro_timings
        )
        results[name] = (samples, kokoro_times)
    return results


async def add_agent(hass: HomeAssistant, llama: LlamaServerStandIn) -> str:
    """The agent with a tool file; Home Assistant started (it serves HTTP)."""
    tools = Path(hass.config.path(DOMAIN, "tools"))
    await asyncio.to_thread(tools.mkdir, parents=True)
    await asyncio.to_thread((tools / "weather.toml").write_text, WEATHER_TOOL)
    _, agent_id = await async_add_agent(
        hass,
        llama.url,
        DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]},
    )
    assert await async_setup_component(hass, "assist_pipeline", {})
    hass.bus.async_fire(EVENT_HOMEASSISTANT_START)
    await hass.async_block_till_done()
    return agent_id


async def assemble(
    hass: HomeAssistant,
    agent_id: str,
    session: aiohttp.ClientSession,
    stt_port: int,
    tts_port: int,
) -> Satellite:
    """Both Wyoming entries, a pipeline with the agent, a satellite."""
    stt_entry = await add_wyoming_entry(hass, stt_port)
    tts_entry = await add_wyoming_entry(hass, tts_port)
    pipeline_id = await create_pipeline(
        hass,
        agent_id,
        entity_id_of(hass, stt_entry, "stt"),
        entity_id_of(hass, tts_entry, "tts"),
        VOICE,
    )
    base = f"http://127.0.0.1:{hass.http.server_port}"
    return Satellite(hass, pipeline_id, lambda path: session.get(base + path))


if __name__ == "__main__":
    parser = command_line(__doc__, runs=STAND_IN_RUNS)
    parser.set_defaults(runs=None)
    parser.add_argument("--whisper-ms", type=float, default=100)
    parser.add_argument("--llama-ms", type=float, default=200)
    parser.add_argument("--skip-real", action="store_true", help="tiny model only")
    parser.add_argument(
        "--real",
        action="store_true",
        help=f"every engine real: scripts/setup's household ({REAL_RUNS} runs)",
    )
    parser.add_argument(
        "--audio-ctx",
        type=int,
        default=512,
        help="with --real: whisper-server's -ac (default 512, as develop; 0: full)",
    )
    args = parser.parse_args()
    if args.real:
        # Imported here: voice_real imports this module.
        from benchmarks import voice_real

        asyncio.run(voice_real.main(args.runs or REAL_RUNS, args.audio_ctx))
    else:
        asyncio.run(
            main(
                args.runs or STAND_IN_RUNS,
                args.whisper_ms / 1000,
                args.llama_ms / 1000,
                args.skip_real,
            )
        )
