"""300 LAN clients at once against the relay and Kokoro, each its own process.

Every client opens a connection, starts a request and sends what it holds
(audio without audio-stop, text without synthesize-stop), then waits. The
server's resident memory is read from /proc while they hold on, and every
one of them gets an error event and is disconnected (busy past a bound,
idle once it went silent); a satellite's question on a fresh connection is
answered afterwards, and the memory stays under the bound.
"""

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
from pathlib import Path
import re

import pytest
from wyoming.asr import Transcript
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import async_read_event, async_write_event
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart

from custom_components.desktop_assistant.text import words
from tests.harness.real_engines import (
    RealWhisperServer,
    speak,
    start_whisper_server,
)
from tests.harness.wyoming import (
    KOKORO_VOICES,
    free_port,
    module_argv,
    read_until,
    send_utterance,
    server_process,
    tcp_client,
    write_kokoro_config,
)
from wyoming_services.limits import (
    DEFAULT_MAX_AUDIO_MB,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_WAITING_CHARACTERS,
)

CLIENTS = 300
MIB = 1 << 20
# How long a client that sent its part stays silent before the server closes
# it: the test's own setting, so that it does not wait the default 60 s.
IDLE_TIMEOUT = 3
# What each client sends: 30 s of audio (about 1 MB), or 148000 characters
# (one such text fits under the bound for all, a second does not).
AUDIO_SECONDS = 30
TEXT = "the lights are on in the kitchen and " * 4000
# Beyond what the bound holds: the Python objects of 32 connections, their
# stream buffers (64 KiB each), events being read (a text event is up to
# 1 MiB while it is parsed) and the allocator's slack.
OVERHEAD = 48 * MIB
QUESTION = "What is the weather like in Rome tomorrow?"


def memory(pid: int) -> dict[str, int]:
    """Resident memory now (VmRSS) and at its peak (VmHWM), in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


async def send_audio(writer: asyncio.StreamWriter) -> None:
    await async_write_event(AudioStart(16000, 2, 1).event(), writer)
    second = bytes(32000)
    for _ in range(AUDIO_SECONDS):
        await async_write_event(AudioChunk(16000, 2, 1, second).event(), writer)


async def send_text(writer: asyncio.StreamWriter) -> None:
    await async_write_event(SynthesizeStart().event(), writer)
    await async_write_event(SynthesizeChunk(text=TEXT).event(), writer)


async def one_client(
    port: int, send: Callable[[asyncio.StreamWriter], Awaitable[None]]
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect and send (the server may close it meanwhile).

    The writer is kept: a writer that is collected closes its connection.
    """
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    with contextlib.suppress(ConnectionError):
        await send(writer)
    return reader, writer


async def what_each_got(reader: asyncio.StreamReader) -> str:
    """The code of the error the server sent before closing, else how it ended.

    "reset" or "closed": the server refused the client while it was still
    sending, and the write that failed dropped the error unread.
    """
    codes = []
    try:
        async with asyncio.timeout(60):
            while (event := await async_read_event(reader)) is not None:
                if Error.is_type(event.type):
                    codes.append(Error.from_event(event).code or "")
                elif event.type not in ("audio-start", "audio-chunk", "audio-stop"):
                    codes.append(event.type)
    except ConnectionError:  # reset, or the pipe its own write broke
        codes.append("reset")
    return "+".join(codes) or "closed"


@contextlib.asynccontextmanager
async def flooded(
    port: int, send: Callable[[asyncio.StreamWriter], Awaitable[None]]
) -> AsyncIterator[list[asyncio.StreamReader]]:
    """CLIENTS connections at once, each having sent its part."""
    clients = await asyncio.gather(*(one_client(port, send) for _ in range(CLIENTS)))
    try:
        yield [reader for reader, _ in clients]
    finally:
        for _, writer in clients:
            writer.close()


async def hold_and_release(
    pid: int,
    port: int,
    send: Callable[[asyncio.StreamWriter], Awaitable[None]],
    log: Path,
) -> tuple[dict[str, int], dict[str, int]]:
    """Flood the server; its memory before, and at the peak; each client's end."""
    before = memory(pid)
    async with flooded(port, send) as readers:
        await asyncio.sleep(1)  # what was sent is read and held
        during = memory(pid)
        ends = await asyncio.gather(*(what_each_got(reader) for reader in readers))
    # Every client was disconnected: past a bound at once, else once idle.
    assert set(ends) <= {"busy", "idle", "reset", "closed"}, sorted(set(ends))
    assert ends.count("idle") <= DEFAULT_MAX_CONNECTIONS
    # The server sent each refused one its error (some went unread).
    text = await asyncio.to_thread(log.read_text)
    refused = text.count("refused a connection") + text.count("closing a connection")
    other = [
        line
        for line in text.splitlines()
        if not re.search("refused a connection|closing a connection|phonemizer", line)
    ]
    assert refused + text.count("client idle for") == CLIENTS, (
        Counter(ends),
        other,
    )
    return before, during


@pytest.mark.timeout(600)
async def test_300_clients_holding_audio_leave_the_relay_its_memory(
    tmp_path: Path, socket_enabled: None
) -> None:
    with start_whisper_server(tmp_path, "--audio-ctx", "512") as whisper:
        await flood_the_relay(whisper, tmp_path)


async def flood_the_relay(real_whisper: RealWhisperServer, tmp_path: Path) -> None:
    """The relay in front of `real_whisper`, flooded, then asked a question."""
    port = free_port()
    config = tmp_path / "relay.toml"
    config.write_text(
        f'[whisper]\nurls = ["{real_whisper.url}"]\ntimeout = 120\n'
        f"idle_timeout = {IDLE_TIMEOUT}\n"
    )
    argv = module_argv(
        "wyoming_services.whisper",
        *("--uri", f"tcp://127.0.0.1:{port}", "--config", str(config)),
    )
    async with server_process(argv, port, tmp_path / "relay.log") as relay:
        before, during = await hold_and_release(
            relay.pid, port, send_audio, tmp_path / "relay.log"
        )
        bound = before["VmRSS"] + DEFAULT_MAX_AUDIO_MB * MIB + OVERHEAD
        assert during["VmHWM"] < bound, (before, during)
        audio, rate = speak(QUESTION)
        # Whisper base on a busy 2-core machine: far longer than the default.
        async with AsyncTcpClient("127.0.0.1", port, read_timeout=120) as satellite:
            await send_utterance(satellite, audio, rate=rate, language="en")
            event = (await read_until(satellite, "transcript"))[-1]
        assert Transcript.is_type(event.type), event
        assert words(Transcript.from_event(event).text) == words(QUESTION)
        assert memory(relay.pid)["VmRSS"] < bound


@pytest.mark.timeout(600)
async def test_300_clients_holding_text_leave_kokoro_its_memory(
    tiny_models: Path, tmp_path: Path, socket_enabled: None
) -> None:
    port = free_port()
    config = write_kokoro_config(
        tmp_path, tiny_models, f"idle_timeout = {IDLE_TIMEOUT}\n{KOKORO_VOICES}"
    )
    argv = module_argv(
        "wyoming_services.kokoro",
        *("--uri", f"tcp://127.0.0.1:{port}", "--config", str(config)),
    )
    async with server_process(argv, port, tmp_path / "kokoro.log") as kokoro:
        before, during = await hold_and_release(
            kokoro.pid, port, send_text, tmp_path / "kokoro.log"
        )
        # A character waits as at most 4 bytes of a Python string.
        bound = before["VmRSS"] + DEFAULT_MAX_WAITING_CHARACTERS * 4 + OVERHEAD
        assert during["VmHWM"] < bound, (before, during)
        async with tcp_client(port) as satellite:
            await satellite.write_event(Synthesize(text="The lights are on.").event())
            events = await read_until(satellite, "audio-stop")
        assert events[-1].type == "audio-stop"
        assert any(event.type == "audio-chunk" for event in events)
        assert memory(kokoro.pid)["VmRSS"] < bound
