"""The README's llama-server command, run as written against the packaged binary.

Quick-start step 2 and *Getting llama-server* tell a newcomer how to start
llama-server; these tests take those command lines from the README itself,
so a flag the binary refuses fails here before it fails for a user.
"""

from collections.abc import Iterator
from pathlib import Path
import re
import shlex
import subprocess
import sys
import time

import aiohttp
import pytest

from tests.harness.ports import free_port
from tests.harness.real_engines import llama_server_binary
from tests.harness.tiny_llama import write_tiny_gguf

README = Path(__file__).resolve().parents[2] / "README.md"
# `llama-server -m MODEL ...` in backticks, as quick-start step 2 writes it.
QUICK_START = re.compile(r"`(llama-server -m [^`]+)`")
# The packaged binary's real path, as *Getting llama-server* has it.
PACKAGED_PATH = re.compile(r"\"\$\(python -c '([^']+)'\)\"")


def readme_command() -> list[str]:
    """The quick-start command line, split as a shell would."""
    found = QUICK_START.findall(README.read_text())
    assert found, "the README no longer shows a llama-server command line"
    assert len(set(found)) == 1, f"the README shows different command lines: {found}"
    return shlex.split(found[0])


def with_model_and_port(argv: list[str], model: Path, port: int) -> list[str]:
    """The README's arguments with our model file and a free port."""
    args = list(argv[1:])
    args[args.index("-m") + 1] = str(model)
    args[args.index("--port") + 1] = str(port)
    return args


@pytest.fixture
def running_as_written(
    tmp_path: Path, socket_enabled: None
) -> Iterator[tuple[str, Path]]:
    """llama-server started with the README's flags (plus an API key)."""
    binary = llama_server_binary()
    port = free_port()
    args = with_model_and_port(
        readme_command(), write_tiny_gguf(tmp_path / "m.gguf"), port
    )
    log_path = tmp_path / "llama-server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(binary), *args, "--api-key", "quick-start-key"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "listening on http://" not in log_path.read_text(errors="replace"):
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1", log_path
    finally:
        process.terminate()
        process.wait(10)


def test_the_readme_shows_the_flags_the_agent_needs() -> None:
    argv = readme_command()
    assert argv[0] == "llama-server"
    assert "--jinja" in argv  # tool calling
    assert argv[argv.index("--host") + 1] == "0.0.0.0"  # reachable from HA's box


async def test_the_packaged_binary_accepts_the_quick_start_flags(
    running_as_written: tuple[str, Path], socket_enabled: None
) -> None:
    url, log_path = running_as_written
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{url}/models") as refused:
            assert refused.status == 401  # the key of step 3 is asked for
        async with session.post(
            f"{url}/chat/completions",
            headers={"Authorization": "Bearer quick-start-key"},
            json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4},
        ) as answered:
            assert answered.status == 200, await answered.text()
            body = await answered.json()
    assert body["choices"][0]["message"]["role"] == "assistant"
    log = log_path.read_text(errors="replace")
    assert "error: invalid argument" not in log
    assert "unknown argument" not in log


def test_the_packaged_binary_path_the_readme_gives_is_the_binary() -> None:
    binary = llama_server_binary()
    found = PACKAGED_PATH.findall(README.read_text())
    assert found, "the README no longer says where the packaged binary is"
    printed = subprocess.run(
        [sys.executable, "-c", found[0]], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert Path(printed) == binary
    help_text = subprocess.run(
        [printed, "--help"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    for flag in ("--jinja", "--api-key", "--host", "--port", "-c,"):
        assert flag in help_text
