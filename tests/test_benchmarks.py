"""Every benchmark scripts/bench runs (benchmarks/*.py) runs tiny, so none rots.

Each runs as `scripts/bench NAME --runs 1` does, in a process of its own,
and must print its tables and exit cleanly. A benchmark that needs an engine
this machine lacks says so; the test then skips with that reason.
"""

from pathlib import Path
import subprocess
import sys
from typing import Any

from homeassistant.components.assist_pipeline import PipelineEvent, PipelineEventType
import pytest

from benchmarks.voice_real import text_times
from tests.harness.satellite import Run

ROOT = Path(__file__).resolve().parent.parent
# The benchmark scripts: the modules of benchmarks/ that run as a program.
BENCHMARKS = sorted(
    path.stem
    for path in (ROOT / "benchmarks").glob("*.py")
    if 'if __name__ == "__main__":' in path.read_text()
)
# Arguments beyond `--runs 1` that keep a benchmark small.
TINY_ARGUMENTS: dict[str, list[str]] = {
    # The real Kokoro model's runs take minutes.
    "wyoming_bench": ["--skip-real"],
    "voice_pipeline": ["--skip-real"],
    "record_bench": ["--conversations", "200", "--queries", "5", "--turns", "3"],
    "memory_bench": ["--small"],
}


def test_the_benchmarks_are_found() -> None:
    assert {"agent_overhead", "prompt_cache", "versus_core"} <= set(BENCHMARKS)
    assert "harness" not in BENCHMARKS
    assert set(TINY_ARGUMENTS) <= set(BENCHMARKS)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_runs(name: str) -> None:
    arguments = TINY_ARGUMENTS.get(name, [])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            f"benchmarks.{name}",
            "--runs",
            "1",
            *arguments,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # A table: a line of at least three columns holding a number.
    has_table = any(
        len(line.split()) >= 3 and any(char.isdigit() for char in line)
        for line in result.stdout.splitlines()
    )
    missing = [line for line in result.stdout.splitlines() if "not installed" in line]
    # An engine left out on purpose (--skip-real) is no missing engine.
    if missing and "--skip-real" not in arguments:
        pytest.skip(missing[0].split(": ", 1)[-1])
    assert has_table, output


def test_voice_pipeline_offers_every_engine_real() -> None:
    # `--real` runs minutes of real engines, too long for this test: its command
    # line is checked here, and the stage times it reads from a run below.
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.voice_pipeline", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "--real" in result.stdout
    assert "--runs" in result.stdout


def pipeline_run(deltas: list[tuple[float, dict[str, Any]]], ended: float) -> Run:
    """A run whose agent streamed `deltas` (at their times) and ended at `ended`."""
    run = Run(speech_ended_at=0.0)
    for at, data in [(0.5, None), *[(at, d) for at, d in deltas]]:
        kind = PipelineEventType.INTENT_PROGRESS if data else PipelineEventType.STT_END
        run.events.append(PipelineEvent(kind, data))
        run.event_times.append(at)
    run.events.append(PipelineEvent(PipelineEventType.INTENT_END, {}))
    run.event_times.append(ended)
    return run


def content(text: str) -> dict[str, Any]:
    """A chat log delta of the agent's text, as the pipeline sends it."""
    return {"chat_log_delta": {"content": text}}


def test_the_first_clause_is_timed_when_it_is_written() -> None:
    # Home Assistant streams the reply into Kokoro once it is long enough.
    streamed = pipeline_run(
        [
            (1.0, {"chat_log_delta": {"role": "assistant"}}),
            (1.1, content("Paris, ")),
            (1.2, content("the capital of France, ")),
            (1.3, {"tts_start_streaming": True}),
            (1.4, content("is a city of two million people and many museums.")),
        ],
        ended=2.0,
    )
    assert text_times(streamed)[:2] == (1.1, 1.2)
    assert text_times(streamed)[2].startswith("Paris, the capital")
    # A short reply is spoken once the agent ends.
    short = pipeline_run(
        [(1.1, content("The capital is ")), (1.2, content("Paris."))], ended=1.5
    )
    assert text_times(short)[:2] == (1.1, 1.5)
