"""wyoming-whisper-relay over real Wyoming connections, against a whisper-server
stand-in."""

import asyncio
import json
import logging
from pathlib import Path
import signal
import socket
import sys

import numpy as np
import pytest
from wyoming.asr import Transcript
from wyoming.audio import AudioStart, AudioStop
from wyoming.error import Error
from wyoming.info import Describe, Info

from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import (
    ProcessClient,
    dominant_hz,
    free_port,
    module_argv,
    read_until,
    send_utterance,
    server_process,
    tcp_client,
    tone,
    whisper_wyoming,
)
from wyoming_services.service import zeroconf_advert

MODULE = "wyoming_services.whisper"


async def transcribe(port: int, audio: bytes, **utterance) -> Transcript | Error:
    async with tcp_client(port) as client:
        await send_utterance(client, audio, **utterance)
        event = (await read_until(client, "transcript"))[-1]
    if Error.is_type(event.type):
        return Error.from_event(event)
    return Transcript.from_event(event)


async def test_info_lists_whisper_languages(
    whisper_server: WhisperServerStandIn,
) -> None:
    async with whisper_wyoming(whisper_server.url) as port, tcp_client(port) as client:
        await client.write_event(Describe().event())
        info = Info.from_event((await read_until(client, "info"))[-1])
    (program,) = info.asr
    assert program.name == "whisper-cpp"
    assert program.installed
    languages = program.models[0].languages
    assert len(languages) == 100
    assert {"it", "en", "de", "yue"} <= set(languages)


async def test_info_lists_only_a_configured_language(
    whisper_server: WhisperServerStandIn,
) -> None:
    async with whisper_wyoming(whisper_server.url, "IT") as port, tcp_client(port) as c:
        await c.write_event(Describe().event())
        info = Info.from_event((await read_until(c, "info"))[-1])
    assert info.asr[0].models[0].languages == ["it"]


async def test_transcribes_in_the_language_asked(
    whisper_server: WhisperServerStandIn,
) -> None:
    whisper_server.speech = " Accendi la luce in cucina. [BLANK_AUDIO]"
    async with whisper_wyoming(whisper_server.url) as port:
        result = await transcribe(port, tone(16000, 2, 1), language="it")

    assert result == Transcript(text="Accendi la luce in cucina.", language="it")
    (request,) = whisper_server.requests
    assert request.parts == {
        "language": "it",
        "response_format": "verbose_json",
        "temperature": "0.0",
        # The language whisper decoded with comes without this table, which
        # costs whisper-server a second detection.
        "no_language_probabilities": "true",
    }
    assert (request.file_name, request.file_type) == ("audio.wav", "audio/wav")


async def test_region_of_the_asked_language_is_dropped(
    whisper_server: WhisperServerStandIn,
) -> None:
    whisper_server.speech = " Turn on the kitchen light."
    async with whisper_wyoming(whisper_server.url) as port:
        result = await transcribe(port, tone(16000, 2, 1), language="en-US")
    assert result == Transcript(text="Turn on the kitchen light.", language="en")
    assert whisper_server.requests[0].parts["language"] == "en"


@pytest.mark.parametrize("asked", ["en", None])
async def test_auto_lets_whisper_detect_the_language(
    whisper_server: WhisperServerStandIn, asked: str | None
) -> None:
    """Configured `auto` (or a client that names no language): whisper decides."""
    whisper_server.spoken_language = "it"
    setting = "auto" if asked else ""
    async with whisper_wyoming(whisper_server.url, setting) as port:
        result = await transcribe(port, tone(16000, 2, 1), language=asked)
    assert whisper_server.requests[0].parts["language"] == "auto"
    assert isinstance(result, Transcript)
    assert result.language == "it"


async def test_configured_language_wins_over_the_asked_one(
    whisper_server: WhisperServerStandIn,
) -> None:
    async with whisper_wyoming(whisper_server.url, "it") as port:
        result = await transcribe(port, tone(16000, 2, 1), language="en")
    assert whisper_server.requests[0].parts["language"] == "it"
    assert isinstance(result, Transcript)
    assert result.language == "it"


@pytest.mark.parametrize(
    ("rate", "width", "channels"),
    [
        (8000, 2, 1),
        (16000, 2, 1),
        (44100, 2, 1),
        (44100, 2, 2),
        (16000, 1, 1),
        (16000, 4, 1),
        (48000, 4, 2),
        (22050, 2, 4),
    ],
)
async def test_audio_is_converted_to_16k_mono_16_bit(
    whisper_server: WhisperServerStandIn, rate: int, width: int, channels: int
) -> None:
    """A 1 s, 440 Hz tone at half scale reaches whisper-server as one."""
    async with whisper_wyoming(whisper_server.url) as port:
        result = await transcribe(
            port, tone(rate, width, channels), rate=rate, width=width, channels=channels
        )
    assert isinstance(result, Transcript)
    samples = whisper_server.requests[0].samples
    assert abs(len(samples) - 16000) <= 160
    assert dominant_hz(samples, 16000) == pytest.approx(440, abs=3)
    assert np.abs(samples).max() == pytest.approx(16384, rel=0.06)


async def test_whisper_server_down_is_an_error_event(
    whisper_server: WhisperServerStandIn, socket_enabled: None
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    async with whisper_wyoming(down) as port:
        result = await transcribe(port, tone(16000, 2, 1), language="it")
        assert isinstance(result, Error)
        assert result.code == "whisper-server"
        assert result.text.startswith(f"whisper-server at {down} is unreachable")
        # The server itself goes on serving.
        async with tcp_client(port) as client:
            await client.write_event(Describe().event())
            assert (await read_until(client, "info"))[-1].type == "info"


async def test_slow_whisper_server_times_out_and_the_next_utterance_works(
    whisper_server: WhisperServerStandIn,
) -> None:
    whisper_server.delay = 1.0
    async with (
        whisper_wyoming(whisper_server.url, whisper_timeout=0.3) as port,
        tcp_client(port) as client,
    ):
        await send_utterance(client, tone(16000, 2, 1), language="it")
        error = Error.from_event((await read_until(client, "transcript"))[-1])
        assert error.text == (
            f"whisper-server at {whisper_server.url} did not answer within 0.3 s"
        )

        whisper_server.delay = 0.0
        await send_utterance(client, tone(16000, 2, 1), language="it")
        event = (await read_until(client, "transcript"))[-1]
        assert Transcript.from_event(event).text == "Accendi la luce in cucina."


async def test_whisper_server_error_status_is_passed_on(
    whisper_server: WhisperServerStandIn,
) -> None:
    whisper_server.status = 500
    async with whisper_wyoming(whisper_server.url) as port:
        result = await transcribe(port, tone(16000, 2, 1), language="it")
    assert result == Error(
        text="whisper-server answered 500: failed to process audio",
        code="whisper-server",
    )


async def test_answer_without_transcript_is_an_error(
    whisper_server: WhisperServerStandIn,
) -> None:
    whisper_server.raw_body = b"<html>Whisper.cpp Server</html>"
    async with whisper_wyoming(whisper_server.url) as port:
        result = await transcribe(port, tone(16000, 2, 1), language="it")
    assert result == Error(
        text="whisper-server answered without a transcript", code="whisper-server"
    )


async def test_unknown_language_is_refused_before_whisper_server(
    whisper_server: WhisperServerStandIn,
) -> None:
    async with whisper_wyoming(whisper_server.url) as port:
        result = await transcribe(port, tone(16000, 2, 1), language="tlh")
    assert result == Error(
        text="whisper does not know the language 'tlh'", code="unsupported-language"
    )
    assert whisper_server.requests == []


async def test_audio_stop_without_audio_is_an_error(
    whisper_server: WhisperServerStandIn,
) -> None:
    async with whisper_wyoming(whisper_server.url) as port, tcp_client(port) as client:
        await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await client.write_event(AudioStop().event())
        event = (await read_until(client, "transcript"))[-1]
    assert Error.from_event(event).code == "no-audio"
    assert whisper_server.requests == []


async def test_unconvertible_audio_is_an_error(
    whisper_server: WhisperServerStandIn,
) -> None:
    async with whisper_wyoming(whisper_server.url) as port:
        # 500 bytes are not a whole number of 3-byte samples.
        result = await transcribe(port, bytes(500), rate=16000, width=3, channels=1)
    assert result == Error(
        text="cannot convert audio of 16000 Hz, 3 bytes, 1 channels", code="bad-audio"
    )


async def test_one_log_line_per_utterance_with_timings(
    whisper_server: WhisperServerStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    async with whisper_wyoming(whisper_server.url) as port:
        await transcribe(port, tone(16000, 2, 1, seconds=2.0), language="it")
    (line,) = [r.getMessage() for r in caplog.records if "transcribed" in r.message]
    assert line.startswith("transcribed 2.00 s of audio in ")
    assert "ms (whisper-server " in line
    # A tone is no speech: no pause after speech, so asked at audio-stop.
    assert line.endswith(
        "language it (asked it), 26 characters; answered with the transcript "
        "asked at audio-stop (0 asked at pauses)"
    )


# As a process: stdio, signals, the command line --------------------------


def write_whisper_config(folder: Path, url: str, extra: str = "") -> Path:
    path = folder / "whisper.toml"
    path.write_text(f'[whisper]\nurl = "{url}"\n{extra}')
    return path


def stdio_client(whisper_server: WhisperServerStandIn, folder: Path) -> ProcessClient:
    """The server as a process on stdin and stdout, asking the stand-in."""
    config = write_whisper_config(folder, whisper_server.url)
    argv = module_argv(MODULE, "--uri", "stdio://", "--config", str(config))
    return ProcessClient(argv, folder / "stderr.log")


async def test_stdio_transcribes(
    whisper_server: WhisperServerStandIn, tmp_path: Path
) -> None:
    async with stdio_client(whisper_server, tmp_path) as client:
        await client.write_event(Describe().event())
        info = Info.from_event((await read_until(client, "info"))[-1])
        await send_utterance(client, tone(44100, 2, 2), 44100, 2, 2, language="it")
        event = (await read_until(client, "transcript"))[-1]
    assert info.asr[0].name == "whisper-cpp"
    assert Transcript.from_event(event).text == "Accendi la luce in cucina."
    assert client.process is not None and client.process.returncode == 0
    assert "Traceback" not in client.stderr


async def test_stdio_refuses_an_oversized_event(
    whisper_server: WhisperServerStandIn, tmp_path: Path
) -> None:
    # The same limits as over TCP: the header is answered, its 4 GB never read.
    async with stdio_client(whisper_server, tmp_path) as client:
        assert client.process is not None and client.process.stdin is not None
        client.process.stdin.write(
            json.dumps(
                {"type": "audio-chunk", "payload_length": 4_000_000_000}
            ).encode()
            + b"\n"
        )
        event = await client.read_event()
    assert event is not None
    assert Error.from_event(event) == Error(
        text="payload_length 4000000000 is over the limit of 8388608", code="bad-event"
    )
    assert client.process.returncode == 0
    assert "Traceback" not in client.stderr


async def test_sigterm_stops_the_stdio_server_cleanly(
    whisper_server: WhisperServerStandIn, tmp_path: Path
) -> None:
    async with stdio_client(whisper_server, tmp_path) as client:
        await client.write_event(Describe().event())
        await read_until(client, "info")
        assert client.process is not None
        client.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(client.process.wait(), 10) == 0
    assert "Traceback" not in client.stderr


async def test_sigterm_stops_the_server_cleanly(
    whisper_server: WhisperServerStandIn, tmp_path: Path
) -> None:
    config = write_whisper_config(tmp_path, whisper_server.url)
    port = free_port()
    argv = module_argv(MODULE, "--uri", f"tcp://127.0.0.1:{port}")
    stderr = tmp_path / "stderr.log"
    async with server_process([*argv, "--config", str(config)], port, stderr) as server:
        async with tcp_client(port) as client:
            await send_utterance(client, tone(16000, 2, 1), language="it")
            assert (await read_until(client, "transcript"))[-1].type == "transcript"
        server.send_signal(signal.SIGTERM)
        assert await server.wait() == 0
    log = stderr.read_text()
    assert "listening on tcp://127.0.0.1:" in log
    assert log.rstrip().endswith("stopped")
    assert "Traceback" not in log


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            'lnguage = "it"\n',
            "unknown key 'whisper.lnguage' (known: connect_timeout, idle_timeout, language, max_audio_mb, max_connections, timeout, transcribe_at_pause, url, urls, wake_address, wake_from, wake_mac, wake_port)",
        ),
        ('language = "klingon"\n', "whisper.language: whisper does not know 'klingon'"),
        ("timeout = 0\n", "whisper.timeout must be more than 0 seconds"),
    ],
)
async def test_bad_config_is_one_line_on_stderr(
    tmp_path: Path, extra: str, message: str
) -> None:
    config = write_whisper_config(tmp_path, "http://127.0.0.1:8182", extra)
    process = await asyncio.create_subprocess_exec(
        *module_argv(MODULE, "--uri", "stdio://", "--config", str(config)),
        stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    assert process.returncode == 1
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert lines[0].endswith(message)


async def test_zeroconf_needs_a_tcp_uri() -> None:
    process = await asyncio.create_subprocess_exec(
        *module_argv(MODULE, "--uri", "stdio://", "--zeroconf"),
        stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    assert process.returncode == 1
    assert stderr.decode().strip() == "error: --zeroconf needs a tcp://HOST:PORT --uri"


# pytest-socket refuses AF_UNIX connects in this process, so a second process
# plays the client.
UNIX_CLIENT = """
import asyncio, sys
from wyoming.client import AsyncUnixClient
from wyoming.info import Describe

async def main():
    async with AsyncUnixClient(sys.argv[1]) as client:
        await client.write_event(Describe().event())
        print((await client.read_event()).data["asr"][0]["name"])

asyncio.run(main())
"""


async def test_unix_socket_serves_and_is_removed_at_exit(tmp_path: Path) -> None:
    path = tmp_path / "whisper.sock"
    argv = module_argv(MODULE, "--uri", f"unix://{path}")
    log = await asyncio.to_thread((tmp_path / "stderr.log").open, "wb")
    with log:
        server = await asyncio.create_subprocess_exec(*argv, stderr=log)
    try:
        for _ in range(300):
            if path.exists():
                break
            await asyncio.sleep(0.05)
        client = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            UNIX_CLIENT,
            str(path),
            stdout=asyncio.subprocess.PIPE,
        )
        stdout, _ = await client.communicate()
        assert stdout.decode().strip() == "whisper-cpp"
        server.send_signal(signal.SIGTERM)
        assert await server.wait() == 0
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
    assert not path.exists()


def test_zeroconf_names_the_program_and_host() -> None:
    advert = zeroconf_advert("tcp://0.0.0.0:10300", "", "wyoming-whisper-relay")
    assert advert is not None
    assert advert.name == f"wyoming-whisper-relay-{socket.gethostname()}"
    assert (advert.host, advert.port) == ("0.0.0.0", 10300)
    named = zeroconf_advert("tcp://192.0.2.7:10300", "kitchen stt", "x")
    assert named is not None
    assert (named.name, named.host) == ("kitchen stt", "192.0.2.7")
    assert zeroconf_advert("tcp://0.0.0.0:10300", None, "x") is None
