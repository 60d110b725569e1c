"""wyoming-whisper-relay against a hostile client and a broken whisper-server.

Each test sends the bad input over a real Wyoming TCP connection and checks
what the client gets, that no connection task ends in an exception ("Task
exception was never retrieved"), and that the next request is transcribed.
"""

import asyncio
import json

import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.event import Event

from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import (
    handler_tasks,
    raw_exchange,
    read_until,
    send_utterance,
    tcp_client,
    tone,
    whisper_wyoming,
)
from wyoming_services.limits import ClientLimits
from wyoming_services.service import MAX_PAYLOAD_BYTES

SPOKEN = "Accendi la luce in cucina."


async def next_result(client: AsyncClient) -> Transcript | Error:
    event = (await read_until(client, "transcript"))[-1]
    if Error.is_type(event.type):
        return Error.from_event(event)
    return Transcript.from_event(event)


async def transcribes(client: AsyncClient) -> bool:
    """The next utterance on `client` gets the stand-in's transcript."""
    await send_utterance(client, tone(16000, 2, 1), language="it")
    result = await next_result(client)
    return isinstance(result, Transcript) and result.text == SPOKEN


async def new_connection_transcribes(port: int) -> bool:
    async with tcp_client(port) as client:
        return await transcribes(client)


async def no_task_failed(tasks: list[asyncio.Task]) -> bool:
    """Every connection task ended without an exception."""
    await asyncio.wait(tasks, timeout=10)
    return all(t.done() and not t.cancelled() and t.exception() is None for t in tasks)


@pytest.mark.parametrize(
    ("rate", "width", "channels"),
    [
        (7999, 2, 1),
        (48001, 2, 1),
        (1, 1, 1),
        (16000, 0, 1),
        (16000, 5, 1),
        (16000, 2, 0),
        (16000, 2, 9),
    ],
)
async def test_audio_format_no_microphone_sends_is_refused(
    whisper_server: WhisperServerStandIn, rate: int, width: int, channels: int
) -> None:
    async with (
        whisper_wyoming(whisper_server.url) as port,
        tcp_client(port) as client,
    ):
        await send_utterance(client, bytes(4000), rate, width, channels)
        result = await next_result(client)
        assert result == Error(
            text=f"cannot take audio of {rate} Hz, {width} bytes, {channels} channels "
            "(takes 8000-48000 Hz, 1-4 bytes, 1-8 channels)",
            code="bad-audio",
        )
        assert whisper_server.requests == []
        assert await transcribes(client)


async def test_length_cap_counts_the_audio_as_converted(
    whisper_server: WhisperServerStandIn,
) -> None:
    """301 s of 8 kHz 8-bit audio is 2.4 MB as sent, 9.6 MB once converted."""
    async with (
        whisper_wyoming(whisper_server.url) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(AudioStart(rate=8000, width=1, channels=1).event())
        second = tone(8000, 1, 1)
        for _ in range(301):
            await client.write_event(AudioChunk(8000, 1, 1, second).event())
        await client.write_event(Event(type="audio-stop"))
        assert await next_result(client) == Error(
            text="utterance is longer than 300 s", code="too-long"
        )
        assert whisper_server.requests == []
        assert await transcribes(client)


async def test_client_silent_mid_utterance_is_disconnected(
    whisper_server: WhisperServerStandIn,
) -> None:
    limits = ClientLimits(idle_seconds=0.3)
    async with whisper_wyoming(whisper_server.url, limits=limits) as port:
        async with tcp_client(port) as client:
            assert await transcribes(client)
            tasks = handler_tasks()
            await client.write_event(
                AudioStart(rate=16000, width=2, channels=1).event()
            )
            await client.write_event(AudioChunk(16000, 2, 1, bytes(3200)).event())
            event = await client.read_event()
            assert event is not None
            assert Error.from_event(event) == Error(
                text="no event for 0.3 s", code="idle"
            )
            assert await client.read_event() is None  # closed
        assert await no_task_failed(tasks)
        assert whisper_server.requests[1:] == []
        assert await new_connection_transcribes(port)


async def test_client_gone_mid_transcription_ends_cleanly(
    whisper_server: WhisperServerStandIn,
) -> None:
    whisper_server.delay = 0.5
    async with whisper_wyoming(whisper_server.url) as port:
        async with tcp_client(port) as client:
            await send_utterance(client, tone(16000, 2, 1), language="it")
            tasks = handler_tasks()
            async with asyncio.timeout(10):
                while not whisper_server.requests:  # noqa: ASYNC110 (a stand-in's list)
                    await asyncio.sleep(0.01)
        # The client left while whisper-server was working.
        assert await no_task_failed(tasks)
        whisper_server.delay = 0.0
        assert await new_connection_transcribes(port)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"width": 2, "channels": 1}, "rate must be a whole number, got None"),
        ({"rate": "16000", "width": 2, "channels": 1}, "rate must be a whole number"),
        ({"rate": 16000, "width": 2.0, "channels": 1}, "width must be a whole number"),
        ({"rate": 16000, "width": 2, "channels": True}, "channels must be a whole"),
    ],
)
async def test_audio_chunk_with_bad_fields_is_an_error_and_the_connection_goes_on(
    whisper_server: WhisperServerStandIn, data: dict, message: str
) -> None:
    async with (
        whisper_wyoming(whisper_server.url) as port,
        tcp_client(port) as client,
    ):
        tasks = handler_tasks()
        await client.write_event(Event(type="audio-chunk", data=data, payload=b"\0\0"))
        error = await next_result(client)
        assert isinstance(error, Error)
        assert error.code == "bad-event"
        assert error.text.startswith(f"bad audio-chunk event: {message}")
        assert await transcribes(client)
    assert await no_task_failed(tasks)


@pytest.mark.parametrize("language", [7, ["it"], {"code": "it"}])
async def test_language_that_is_not_a_string_is_an_error(
    whisper_server: WhisperServerStandIn, language: object
) -> None:
    async with (
        whisper_wyoming(whisper_server.url) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(Event(type="transcribe", data={"language": language}))
        assert await next_result(client) == Error(
            text="bad transcribe event: language must be a string", code="bad-event"
        )
        assert await transcribes(client)
    assert whisper_server.requests[0].parts["language"] == "it"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"[1, 2, 3]", "whisper-server answered without a transcript"),
        (b'{"text": 42}', "whisper-server answered without a transcript"),
        (b'{"text": "ok", "language": [1]}', None),
        (b"[" * 300_000, "whisper-server answered without a transcript"),
        (b'{"text": "\xff\xfe"}', "whisper-server answered without a transcript"),
        (b"x" * (3 << 20), "whisper-server answered with more than 1048576 bytes"),
    ],
)
async def test_whisper_server_answer_that_is_not_the_expected_json(
    whisper_server: WhisperServerStandIn, body: bytes, message: str | None
) -> None:
    whisper_server.raw_body = body
    async with (
        whisper_wyoming(whisper_server.url) as port,
        tcp_client(port) as client,
    ):
        await send_utterance(client, tone(16000, 2, 1))
        result = await next_result(client)
        if message is None:  # a language that is no name is left out
            assert result == Transcript(text="ok", language=None)
        else:
            assert result == Error(text=message, code="whisper-server")
        whisper_server.raw_body = None
        assert await transcribes(client)


def header(event: dict) -> bytes:
    return json.dumps(event).encode() + b"\n"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            header({"type": "audio-chunk", "payload_length": 4_000_000_000}),
            "payload_length 4000000000 is over the limit of 8388608",
        ),
        (
            header({"type": "transcribe", "data_length": 1 << 30}),
            "data_length 1073741824 is over the limit of 1048576",
        ),
        (header({"type": "audio-chunk", "payload_length": -5}), "payload_length is"),
        (b"not json\n", "event header is not JSON"),
        (b"[" * 60_000 + b"\n", "event header is not JSON"),
        (header(["audio-stop"]), "event header is not a JSON object"),
        (header({"data": {}}), "event header has no type or bad data"),
        (b"{" + b" " * 100_000 + b"}\n", "event header is too long"),
        (
            header({"type": "transcribe", "data_length": 3}) + b"[1]",
            "event data is not a JSON object",
        ),
    ],
)
async def test_unreadable_event_closes_the_connection_with_an_error(
    whisper_server: WhisperServerStandIn, data: bytes, message: str
) -> None:
    async with whisper_wyoming(whisper_server.url) as port:
        events, closed = await raw_exchange(port, data)
        assert [e.type for e in events] == ["error"]
        error = Error.from_event(events[0])
        assert error.code == "bad-event"
        assert error.text.startswith(message)
        assert closed
        assert await new_connection_transcribes(port)


async def test_payload_at_the_limit_is_read(
    whisper_server: WhisperServerStandIn,
) -> None:
    """The limit leaves room for any real chunk: here 8 MiB in one event."""
    async with (
        whisper_wyoming(whisper_server.url) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(Transcribe(language="it").event())
        await client.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        audio = bytes(MAX_PAYLOAD_BYTES)
        await client.write_event(AudioChunk(16000, 2, 1, audio).event())
        await client.write_event(Event(type="audio-stop"))
        assert isinstance(await next_result(client), Transcript)
    assert len(whisper_server.requests[0].samples) == MAX_PAYLOAD_BYTES // 2
