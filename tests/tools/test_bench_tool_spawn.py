"""The tool spawn benchmark runs (a few runs), so it cannot rot."""

from pathlib import Path
import subprocess
import sys

REPO = Path(__file__).resolve().parents[2]


def test_tool_spawn_benchmark_prints_its_tables() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.tool_spawn", "--runs", "3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Tool spawn: `echo hi`, 3 runs each way, alternating (ms)"
    assert lines[4].startswith("added by the runner")
    assert lines[-4] == "A tool printing 100 MB"
    assert lines[-1].startswith("runner (stops at 2000 characters)")
