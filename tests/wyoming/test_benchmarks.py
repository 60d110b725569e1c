"""The voice benchmarks run end to end with one run, so that they cannot rot.

Tiny model only (`--skip-real`): the real model's runs take minutes.
"""

import asyncio
from pathlib import Path
import sys

import pytest

REPO = Path(__file__).parents[2]


async def bench(name: str, *args: str) -> str:
    """Run `scripts/bench NAME ARGS` as it runs in the environment; its output."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        f"benchmarks.{name}",
        *args,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 600)
    text = output.decode(errors="replace")
    assert process.returncode == 0, text[-3000:]
    return text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "wyoming_bench",
            [
                "tiny  one-shot ",
                "tiny  streaming ",
                "overhead ",
                "tiny x2 ",
                "tiny x8 ",
                "idle ",
                "real  not run: --skip-real",
            ],
        ),
        (
            "voice_pipeline",
            [
                "Voice pipeline, Kokoro tiny model",
                "long   ADDED: total - engines",
                "short  ADDED: total - engines",
                "Kokoro real model: not run",
            ],
        ),
    ],
)
async def test_benchmark_runs_with_one_run(
    socket_enabled: None, name: str, expected: list[str]
) -> None:
    output = await bench(name, "--runs", "1", "--skip-real")
    lines = output.splitlines()
    for start in expected:
        assert any(line.startswith(start) for line in lines), (start, output[-3000:])
