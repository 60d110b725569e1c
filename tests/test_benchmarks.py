"""Every benchmark scripts/bench runs (benchmarks/*.py) runs tiny, so none rots.

Each runs as `scripts/bench NAME --runs 1` does, in a process of its own,
and must print its tables and exit cleanly. A benchmark that needs an engine
this machine lacks says so; the test then skips with that reason.
"""

from pathlib import Path
import subprocess
import sys

import pytest

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
