"""Audio, clients and server processes for the Wyoming tests."""

import asyncio
from collections.abc import AsyncIterator, Sequence
import contextlib
from functools import partial
from pathlib import Path
import sys

import aiohttp
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import numpy as np
from pytest_homeassistant_custom_component.common import MockConfigEntry
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncClient, AsyncTcpClient
from wyoming.event import Event, async_read_event
from wyoming.server import AsyncTcpServer, HandlerFactory

from desktop_assistant_wake_on_lan import Waker
from tests.harness.ports import free_port
from wyoming_services.limits import ClientLimits
from wyoming_services.whisper.__main__ import build_info, language_setting
from wyoming_services.whisper.handler import WhisperEventHandler
from wyoming_services.whisper.servers import WhisperServers

# The household of the seed: an Italian and an English voice, blended.
KOKORO_VOICES = """
[voice.it]
lang = "it"
blend = { if_sara = 0.8, af_bella = 0.2 }

[voice.en]
lang = "en-us"
blend = { af_heart = 1.0 }
"""
READ_TIMEOUT = 15.0


def tone(
    rate: int, width: int, channels: int, seconds: float = 1.0, hz: float = 440.0
) -> bytes:
    """A sine at half scale as PCM: 8-bit unsigned, 16/32-bit signed, interleaved."""
    wave = 0.5 * np.sin(2 * np.pi * hz * np.arange(int(rate * seconds)) / rate)
    if width == 1:
        samples: np.ndarray = np.round(wave * 127 + 128).astype(np.uint8)
    elif width == 2:
        samples = np.round(wave * 32767).astype("<i2")
    else:
        samples = np.round(wave * 2147483647).astype("<i4")
    return np.repeat(samples, channels).tobytes()


def dominant_hz(samples: np.ndarray, rate: int) -> float:
    """The strongest frequency in `samples`."""
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64)))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(spectrum.argmax())])


async def send_utterance(
    client: AsyncClient,
    audio: bytes,
    rate: int = 16000,
    width: int = 2,
    channels: int = 1,
    language: str | None = None,
) -> None:
    """Transcribe, AudioStart, 1024-sample chunks, AudioStop: as HA sends them."""
    await client.write_event(Transcribe(language=language).event())
    await client.write_event(
        AudioStart(rate=rate, width=width, channels=channels).event()
    )
    step = 1024 * max(width * channels, 1)
    for offset in range(0, len(audio), step):
        chunk = AudioChunk(rate, width, channels, audio[offset : offset + step])
        await client.write_event(chunk.event())
    await client.write_event(AudioStop().event())


async def read_until(client: AsyncClient, *types: str) -> list[Event]:
    """Read events up to and including the first of `types` (or an error)."""
    events = []
    while True:
        event = await client.read_event()
        assert event is not None, f"connection closed, got {[e.type for e in events]}"
        events.append(event)
        if event.type in types or event.type == "error":
            return events


def pcm_of(events: Sequence[Event]) -> np.ndarray:
    """The int16 samples of every audio-chunk in `events`."""
    audio = b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")
    return np.frombuffer(audio, dtype="<i2")


def tcp_client(port: int, read_timeout: float = READ_TIMEOUT) -> AsyncTcpClient:
    """A Wyoming client that gives up on a silent server."""
    return AsyncTcpClient("127.0.0.1", port, read_timeout=read_timeout)


@contextlib.asynccontextmanager
async def tcp_server(handler_factory: HandlerFactory) -> AsyncIterator[int]:
    """Serve `handler_factory` in this event loop on a free port; yield the port."""
    port = free_port()
    server = AsyncTcpServer("127.0.0.1", port)
    await server.start(handler_factory)
    try:
        yield port
    finally:
        await server.stop()
        await _handlers_finished()


@contextlib.asynccontextmanager
async def whisper_wyoming(
    url: str,
    language: str = "",
    whisper_timeout: float = 5.0,
    limits: ClientLimits | None = None,
    transcribe_at_pause: bool = True,
) -> AsyncIterator[int]:
    """The server as `python -m wyoming_services.whisper` builds it, on a free port."""
    async with whisper_failover(
        [url],
        language,
        whisper_timeout,
        limits=limits,
        transcribe_at_pause=transcribe_at_pause,
    ) as (port, _):
        yield port


@contextlib.asynccontextmanager
async def whisper_failover(
    urls: Sequence[str],
    language: str = "",
    whisper_timeout: float = 5.0,
    *,
    connect_timeout: float = 3.0,
    check_interval: float = 3600.0,
    waker: Waker | None = None,
    wake_from: Sequence[str] = (),
    limits: ClientLimits | None = None,
    transcribe_at_pause: bool = True,
) -> AsyncIterator[tuple[int, WhisperServers]]:
    """The server over several whisper-servers, started (checked once) as the
    program starts it, its connections bounded together by `limits` (the
    defaults if None); yield its port and its servers."""
    setting = language_setting(language)
    async with aiohttp.ClientSession() as session:
        servers = WhisperServers(
            session,
            urls,
            whisper_timeout,
            connect_timeout,
            waker=waker,
            wake_from=wake_from,
            check_interval=check_interval,
        )
        await servers.start()
        factory = partial(
            WhisperEventHandler,
            info=build_info(urls, setting),
            servers=servers,
            language_setting=setting,
            limits=limits or ClientLimits(),
            transcribe_at_pause=transcribe_at_pause,
        )
        try:
            async with tcp_server(factory) as port:
                yield port, servers
        finally:
            await servers.stop()


def handler_tasks() -> list[asyncio.Task]:
    """The tasks of the connections the servers of this event loop serve."""
    return [t for t in asyncio.all_tasks() if t.get_name() == "wyoming event handler"]


async def raw_exchange(port: int, data: bytes) -> tuple[list[Event], bool]:
    """Send raw bytes; return the events answered and whether the server closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        events = []
        while True:
            async with asyncio.timeout(READ_TIMEOUT):
                event = await async_read_event(reader)
            if event is None:
                return events, True
            events.append(event)
            if event.type == "error":
                async with asyncio.timeout(READ_TIMEOUT):
                    return events, await reader.read() == b""
    finally:
        writer.close()


async def _handlers_finished() -> None:
    """Let handler tasks whose clients left see end of input and end."""
    for _ in range(200):
        pending = [
            task
            for task in asyncio.all_tasks()
            if task.get_name() == "wyoming event handler" and not task.done()
        ]
        if not pending:
            return
        await asyncio.sleep(0.01)


class ProcessClient(AsyncClient):
    """A Wyoming client speaking to a server's stdin and stdout (stdio://)."""

    def __init__(self, argv: Sequence[str], stderr: Path) -> None:
        super().__init__(read_timeout=READ_TIMEOUT)
        self.argv = list(argv)
        self.stderr_path = stderr
        self.process: asyncio.subprocess.Process | None = None

    async def connect(self) -> None:
        stderr = await asyncio.to_thread(self.stderr_path.open, "wb")
        with stderr:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
            )
        self._reader, self._writer = self.process.stdout, self.process.stdin

    async def disconnect(self) -> None:
        """Close the server's input; it stops at end of input."""
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.close()
        await asyncio.wait_for(self.process.wait(), READ_TIMEOUT)
        self._reader = self._writer = None

    @property
    def stderr(self) -> str:
        """What the server logged."""
        return self.stderr_path.read_text()


def module_argv(module: str, *args: str) -> list[str]:
    """Run a server the way `python -m` does."""
    return [sys.executable, "-m", module, *args]


@contextlib.asynccontextmanager
async def server_process(
    argv: Sequence[str], port: int, stderr: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Start a TCP server process and wait until it accepts connections."""
    log = await asyncio.to_thread(stderr.open, "wb")
    with log:
        process = await asyncio.create_subprocess_exec(*argv, stderr=log)
    try:
        # A minute: Kokoro loads its model and speaks its phrases first, which
        # takes long on a busy small machine; a hang fails all the same.
        for _ in range(1200):
            if process.returncode is not None:
                raise AssertionError(f"server exited, see {stderr}")
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                await writer.wait_closed()
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"server never listened, see {stderr}")
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def add_wyoming_entry(hass: HomeAssistant, port: int) -> ConfigEntry:
    """What the Wyoming Protocol integration's config flow stores: host and port."""
    entry = MockConfigEntry(domain="wyoming", data={"host": "127.0.0.1", "port": port})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    return entry


def entity_id_of(hass: HomeAssistant, entry: ConfigEntry, domain: str) -> str:
    """The entity of `domain` that a config entry added."""
    (entity,) = [
        e
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == domain
    ]
    return entity.entity_id


def write_kokoro_config(folder: Path, models: Path, extra: str = KOKORO_VOICES) -> Path:
    """A config file for the tiny model, with `extra` appended."""
    path = folder / "kokoro.toml"
    path.write_text(
        f'[kokoro]\nmodel = "{models / "kokoro-v1.0.onnx"}"\n'
        f'voices = "{models / "voices-v1.0.bin"}"\n{extra}'
    )
    return path
