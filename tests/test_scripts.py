"""Every script in scripts/ answers --help with its own usage and never
treats an option as a path (a `--help` folder once appeared)."""

import os
from pathlib import Path
import subprocess

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
# Sourced by the others, or read by setup (its pins), not run.
NOT_COMMANDS = {"env.sh", "downloads.sha256"}
# Scripts that take a path or a name as their first argument.
TAKES_AN_OPERAND = {
    "ask-satellite",
    "assemble-kokoro-model",
    "bench",
    "convert-whisper-model",
    "make-test-models",
    "package",
}


def commands() -> list[str]:
    return sorted(
        path.name
        for path in SCRIPTS.iterdir()
        if path.is_file() and path.name not in NOT_COMMANDS
    )


def run(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPTS / name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
        check=False,
    )


def test_every_script_is_listed_here() -> None:
    # A new script gets these checks without anyone remembering to add it.
    assert "setup" in commands()
    assert "develop" in commands()
    assert all(os.access(SCRIPTS / name, os.X_OK) for name in commands())


@pytest.mark.parametrize("name", commands())
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_its_own_usage(name: str, flag: str, tmp_path: Path) -> None:
    result = run(name, flag, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"usage: scripts/{name}" in result.stdout
    assert list(tmp_path.iterdir()) == []  # nothing created, no "--help" folder


@pytest.mark.parametrize("name", sorted(TAKES_AN_OPERAND))
def test_an_unknown_option_is_refused_not_taken_as_a_path(
    name: str, tmp_path: Path
) -> None:
    result = run(name, "--frobnicate", cwd=tmp_path)
    assert result.returncode == 2
    assert "usage" in result.stderr or "unknown option" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_tests_run_on_a_home_assistant_they_know(tmp_path: Path) -> None:
    # --ha names the oldest or the newest environment; nothing else runs.
    result = run("test", "--ha", "2026.1", "--collect-only", cwd=tmp_path)
    assert result.returncode == 2
    assert "--ha oldest|newest" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_benchmarks_run_on_a_home_assistant_they_know(tmp_path: Path) -> None:
    # The same --ha as the tests': evaluate_bench needs the newest.
    result = run("bench", "--ha", "2026.1", "evaluate_bench", cwd=tmp_path)
    assert result.returncode == 2
    assert "--ha oldest|newest" in result.stderr
    assert list(tmp_path.iterdir()) == []
