"""Several whisper-servers in order: failover, health checks, Wake-on-LAN."""

from collections.abc import AsyncIterator
import logging
from pathlib import Path
import signal
import socket

import pytest
from wyoming.asr import Transcript
from wyoming.error import Error

from desktop_assistant_wake_on_lan import Waker
from tests.harness.whisper_server import (
    SilentServer,
    WhisperServerStandIn,
    serve,
    serve_silent,
)
from tests.harness.wyoming import (
    free_port,
    module_argv,
    read_until,
    send_utterance,
    server_process,
    tcp_client,
    tone,
    whisper_failover,
)
from wyoming_services.config import load_config

MODULE = "wyoming_services.whisper"
MAC = "0a1b2c3d4e5f"


@pytest.fixture
async def second_server(socket_enabled: None) -> AsyncIterator[WhisperServerStandIn]:
    """The fallback whisper-server, hearing English."""
    stand_in = WhisperServerStandIn(speech=" Turn on the light.", spoken_language="en")
    async with serve(stand_in):
        yield stand_in
    assert stand_in.violations == []


@pytest.fixture
async def silent_server(socket_enabled: None) -> AsyncIterator[SilentServer]:
    async with serve_silent() as server:
        yield server


async def transcribe(port: int) -> Transcript | Error:
    async with tcp_client(port) as client:
        await send_utterance(client, tone(16000, 2, 1), language="en")
        event = (await read_until(client, "transcript"))[-1]
    if Error.is_type(event.type):
        return Error.from_event(event)
    return Transcript.from_event(event)


def down_url() -> str:
    """A loopback port nobody listens on: connection refused."""
    return f"http://127.0.0.1:{free_port()}"


async def test_first_server_down_the_second_transcribes(
    second_server: WhisperServerStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    first = down_url()
    async with whisper_failover([first, second_server.url]) as (port, servers):
        # The start check found it down and said so.
        assert servers.up == {first: False, second_server.url: True}
        assert f"whisper-server at {first} is unreachable" in caplog.text
        result = await transcribe(port)
    assert result == Transcript(text="Turn on the light.", language="en")
    assert len(second_server.requests) == 1
    (line,) = [r.getMessage() for r in caplog.records if "transcribed" in r.message]
    assert f"(whisper-server at {second_server.url} " in line


async def test_server_that_goes_down_mid_run_fails_over_and_is_skipped_after(
    whisper_server: WhisperServerStandIn, second_server: WhisperServerStandIn
) -> None:
    urls = [whisper_server.url, second_server.url]
    async with whisper_failover(urls) as (port, servers):
        assert isinstance(await transcribe(port), Transcript)
        assert len(whisper_server.requests) == 1
        await whisper_server.stop()  # the desktop goes to sleep

        result = await transcribe(port)
        assert isinstance(result, Transcript)
        assert result.text == "Turn on the light."
        assert servers.up[whisper_server.url] is False

        # Back up: the next background check finds it, questions go to it again.
        await whisper_server.start(int(whisper_server.url.rsplit(":", 1)[1]))
        await servers.check_all()
        assert servers.up[whisper_server.url] is True
        result = await transcribe(port)
        assert isinstance(result, Transcript)
        assert result.text == "Accendi la luce in cucina."
    assert len(second_server.requests) == 1


@pytest.mark.parametrize("fault", ["loading", "inference 503"])
async def test_503_fails_over(
    whisper_server: WhisperServerStandIn,
    second_server: WhisperServerStandIn,
    fault: str,
) -> None:
    """Loading its model (every request 503, /health too), or /inference alone."""
    urls = [whisper_server.url, second_server.url]
    async with whisper_failover(urls) as (port, servers):
        if fault == "loading":
            whisper_server.loading = True  # restarted, loading its model
        else:
            whisper_server.status = 503
        result = await transcribe(port)
        assert isinstance(result, Transcript)
        assert result.text == "Turn on the light."
        if fault == "loading":  # and its health check says so
            assert servers.up[whisper_server.url] is False
    assert len(whisper_server.requests) == (fault != "loading")


async def test_http_500_is_the_answer_not_a_failover(
    whisper_server: WhisperServerStandIn, second_server: WhisperServerStandIn
) -> None:
    whisper_server.status = 500
    urls = [whisper_server.url, second_server.url]
    async with whisper_failover(urls) as (port, servers):
        result = await transcribe(port)
        assert result == Error(
            text="whisper-server answered 500: failed to process audio",
            code="whisper-server",
        )
        assert second_server.requests == []
        assert servers.up[whisper_server.url] is True


async def test_silent_server_fails_over_after_the_connect_timeout(
    silent_server: SilentServer, second_server: WhisperServerStandIn
) -> None:
    """Accepts, never answers: it was fine at start, it hangs mid-run."""
    urls = [silent_server.url, second_server.url]
    async with whisper_failover(urls, connect_timeout=0.5) as (port, servers):
        assert servers.up[silent_server.url] is False  # its start check timed out
        servers.up[silent_server.url] = None  # as if not yet known
        result = await transcribe(port)
        assert isinstance(result, Transcript)
        assert result.text == "Turn on the light."
        assert servers.up[silent_server.url] is False


async def test_known_down_server_costs_the_question_nothing(
    silent_server: SilentServer, second_server: WhisperServerStandIn
) -> None:
    """Known down: the question goes straight on, with no connection to it."""
    urls = [silent_server.url, second_server.url]
    async with whisper_failover(urls, connect_timeout=0.5) as (port, servers):
        assert servers.up[silent_server.url] is False
        connections = silent_server.connections
        for _ in range(3):
            assert isinstance(await transcribe(port), Transcript)
        assert silent_server.connections == connections
    assert len(second_server.requests) == 3


async def test_all_down_is_one_error_naming_each(socket_enabled: None) -> None:
    first, second = down_url(), down_url()
    async with whisper_failover([first, second]) as (port, servers):
        checks = servers.checks
        result = await transcribe(port)
        assert isinstance(result, Error)
        assert result.code == "whisper-server"
        assert result.text.startswith("no whisper-server answers: ")
        assert f"whisper-server at {first} is unreachable" in result.text
        assert f"whisper-server at {second} is unreachable" in result.text
        # The failed question asked for a check at once; it found both down.
        await servers.wait_checks(checks + 1)
        assert servers.up == {first: False, second: False}
        # All known down: each is tried, so the one that is back answers at
        # once, before a background check has found it.
        stand_in = WhisperServerStandIn()
        await stand_in.start(int(second.rsplit(":", 1)[1]))
        try:
            assert isinstance(await transcribe(port), Transcript)
            assert len(stand_in.requests) == 1
        finally:
            await stand_in.stop()


async def test_background_check_finds_a_server_that_came_up(
    socket_enabled: None,
) -> None:
    url = down_url()
    async with whisper_failover([url], check_interval=0.05) as (port, servers):
        assert servers.up[url] is False
        stand_in = WhisperServerStandIn()
        await stand_in.start(int(url.rsplit(":", 1)[1]))
        try:
            await servers.wait_checks(servers.checks + 2)
            assert servers.up[url] is True
            assert stand_in.health_checks >= 1
            assert isinstance(await transcribe(port), Transcript)
        finally:
            await stand_in.stop()


# Wake-on-LAN -------------------------------------------------------------


@pytest.fixture
def wake_listener(socket_enabled: None) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(5)
    yield listener
    listener.close()


def received(listener: socket.socket) -> list[bytes]:
    listener.setblocking(False)
    packets = []
    try:
        while True:
            packets.append(listener.recv(1024))
    except BlockingIOError:
        return packets


async def test_a_question_finding_the_first_down_sends_one_magic_packet(
    second_server: WhisperServerStandIn, wake_listener: socket.socket
) -> None:
    waker = Waker(MAC, "127.0.0.1", wake_listener.getsockname()[1])
    first = down_url()
    async with whisper_failover([first, second_server.url], waker=waker) as (
        port,
        servers,
    ):
        # Checks find it down but do not wake it: the desktop may sleep.
        await servers.check_all()
        assert received(wake_listener) == []
        wake_listener.settimeout(5)

        assert isinstance(await transcribe(port), Transcript)  # the fallback's
        assert wake_listener.recv(1024) == b"\xff" * 6 + bytes.fromhex(MAC) * 16
        servers.up[first] = None  # tried again by a question: refused again
        assert isinstance(await transcribe(port), Transcript)
    # Within 30 s it is not sent again.
    assert received(wake_listener) == []


async def test_a_fallback_down_wakes_nothing(
    whisper_server: WhisperServerStandIn, wake_listener: socket.socket
) -> None:
    waker = Waker(MAC, "127.0.0.1", wake_listener.getsockname()[1])
    async with whisper_failover([whisper_server.url, down_url()], waker=waker) as (
        port,
        _,
    ):
        assert isinstance(await transcribe(port), Transcript)
    assert received(wake_listener) == []


def test_config_reads_urls_in_order_and_the_wake_settings(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_text(
        '[whisper]\nurls = ["http://desktop:8182/", "http://127.0.0.1:8183"]\n'
        'wake_mac = "0A-1B-2C-3D-4E-5F"\nwake_address = "192.168.1.255"\n'
        "connect_timeout = 1.5\n"
    )
    settings = load_config(path).whisper
    assert settings.urls == ("http://desktop:8182", "http://127.0.0.1:8183")
    assert (settings.wake_mac, settings.wake_address, settings.wake_port) == (
        MAC,
        "192.168.1.255",
        9,
    )
    assert settings.connect_timeout == 1.5


# As a process ------------------------------------------------------------


async def test_process_logs_unreachable_servers_at_start_and_fails_over(
    second_server: WhisperServerStandIn, tmp_path: Path
) -> None:
    first = down_url()
    config = tmp_path / "whisper.toml"
    config.write_text(f'[whisper]\nurls = ["{first}", "{second_server.url}"]\n')
    port = free_port()
    argv = module_argv(
        MODULE, "--uri", f"tcp://127.0.0.1:{port}", "--config", str(config)
    )
    stderr = tmp_path / "stderr.log"
    async with server_process(argv, port, stderr) as server:
        result = await transcribe(port)
        server.send_signal(signal.SIGTERM)
        assert await server.wait() == 0
    assert isinstance(result, Transcript)
    log = stderr.read_text()
    assert f"whisper-server at {first} is unreachable" in log
    assert f"(whisper-server at {second_server.url} " in log
    assert "Traceback" not in log
