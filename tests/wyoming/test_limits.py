"""The relay and Kokoro under a LAN's load: bounds for all the clients of a server.

Each bound is reached over real Wyoming connections on loopback: past it a
client gets an `error` event and is disconnected, the others go on.
"""

import asyncio
from collections.abc import Callable
import contextlib

import pytest
from wyoming.asr import Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.info import Describe
from wyoming.tts import SynthesizeChunk, SynthesizeStart, SynthesizeStop

from desktop_assistant_wake_on_lan import Waker
from tests.harness.wake_on_lan import receive_magic_packets
from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import (
    free_port,
    read_until,
    send_utterance,
    tcp_client,
    tcp_server,
    tone,
    whisper_failover,
    whisper_wyoming,
)
from wyoming_services.kokoro.__main__ import KokoroService
from wyoming_services.limits import ClientLimits

SPOKEN = "Accendi la luce in cucina."
SECOND = 16000 * 2  # bytes of a second of 16 kHz 16-bit mono
MAC = "0a1b2c3d4e5f"


async def until(condition: Callable[[], bool]) -> None:
    """Wait (up to 10 s) for the server side to catch up."""
    async with asyncio.timeout(10):
        while not condition():  # noqa: ASYNC110 (state of the server under test)
            await asyncio.sleep(0.01)


async def answered(client: AsyncClient) -> None:
    """One Describe round trip: the server handles this connection."""
    await client.write_event(Describe().event())
    assert (await read_until(client, "info"))[-1].type == "info"


async def transcribed(port: int) -> str:
    """The transcript of a question on a fresh connection."""
    async with tcp_client(port) as client:
        await send_utterance(client, tone(16000, 2, 1), language="it")
        event = (await read_until(client, "transcript"))[-1]
    assert Transcript.is_type(event.type), event
    return Transcript.from_event(event).text


async def refused(client: AsyncClient) -> Error:
    """The error the server sent before it closed the connection."""
    event = await client.read_event()
    assert event is not None and Error.is_type(event.type), event
    assert await client.read_event() is None  # closed
    return Error.from_event(event)


async def test_a_connection_past_the_bound_is_refused_and_the_others_go_on(
    whisper_server: WhisperServerStandIn,
) -> None:
    limits = ClientLimits(max_connections=3)
    async with (
        whisper_wyoming(whisper_server.url, limits=limits) as port,
        contextlib.AsyncExitStack() as stack,
    ):
        held = [await stack.enter_async_context(tcp_client(port)) for _ in range(3)]
        for client in held:
            await answered(client)
        async with tcp_client(port) as extra:
            assert await refused(extra) == Error(
                text="the server serves at most 3 connections at once; "
                "try again shortly",
                code="busy",
            )
        await send_utterance(held[0], tone(16000, 2, 1), language="it")
        assert (await read_until(held[0], "transcript"))[-1].type == "transcript"
        await stack.aclose()
        await until(lambda: limits.connections == 0)
        assert await transcribed(port) == SPOKEN


async def test_audio_past_the_bound_for_all_is_refused_and_the_others_go_on(
    whisper_server: WhisperServerStandIn,
) -> None:
    limits = ClientLimits(max_held=4 * SECOND, unit="bytes of audio")
    async with (
        whisper_wyoming(whisper_server.url, limits=limits) as port,
        tcp_client(port) as speaking,
        tcp_client(port) as greedy,
    ):
        await speaking.write_event(AudioStart(16000, 2, 1).event())
        await speaking.write_event(AudioChunk(16000, 2, 1, bytes(2 * SECOND)).event())
        await answered(speaking)
        assert limits.held >= 2 * SECOND
        # Each alone is under the bound; together they are over it.
        await greedy.write_event(AudioStart(16000, 2, 1).event())
        await greedy.write_event(AudioChunk(16000, 2, 1, bytes(3 * SECOND)).event())
        error = await refused(greedy)
        assert error == Error(
            text=f"the server holds its limit of {4 * SECOND} bytes of audio for "
            "all its clients; try again shortly",
            code="busy",
        )
        await speaking.write_event(AudioChunk(16000, 2, 1, tone(16000, 2, 1)).event())
        await speaking.write_event(AudioStop().event())
        assert (await read_until(speaking, "transcript"))[-1].type == "transcript"
        assert limits.held == 0
    await until(lambda: limits.connections == 0)


async def test_a_connection_silent_between_requests_is_closed(
    whisper_server: WhisperServerStandIn,
) -> None:
    limits = ClientLimits(idle_seconds=0.3)
    async with whisper_wyoming(whisper_server.url, limits=limits) as port:
        async with tcp_client(port) as client:
            await answered(client)
            assert await refused(client) == Error(
                text="no event for 0.3 s", code="idle"
            )
        await until(lambda: limits.connections == 0)
        assert await transcribed(port) == SPOKEN


async def test_kokoro_text_past_the_bound_for_all_is_refused_and_the_others_go_on(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    kokoro_service.limits = ClientLimits(max_held=5000, unit="characters of text")
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as speaking,
        tcp_client(port) as greedy,
    ):
        text = "la " * 1000
        for client in (speaking, greedy):
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk(text=text).event())
        assert await refused(greedy) == Error(
            text="the server holds its limit of 5000 characters of text for all "
            "its clients; try again shortly",
            code="busy",
        )
        await speaking.write_event(SynthesizeStop().event())
        events = await read_until(speaking, "synthesize-stopped")
        assert events[-1].type == "synthesize-stopped"
        assert any(event.type == "audio-chunk" for event in events)
        assert kokoro_service.limits.held == 0


async def test_many_questions_at_once_wake_the_desktop_once(
    whisper_server: WhisperServerStandIn,
) -> None:
    """The first server is down: 20 clients ask together, one packet goes out."""
    async with receive_magic_packets() as receiver:
        waker = Waker(MAC, "127.0.0.1", receiver.port)
        down = f"http://127.0.0.1:{free_port()}"
        async with whisper_failover([down, whisper_server.url], waker=waker) as (
            port,
            _,
        ):
            texts = await asyncio.gather(*(transcribed(port) for _ in range(20)))
            assert texts == [SPOKEN] * 20
            await until(lambda: len(receiver.packets) >= 1)
            assert await transcribed(port) == SPOKEN
            await asyncio.sleep(0.2)
        assert len(receiver.packets) == 1


@pytest.mark.parametrize(
    ("wake_from", "packets"),
    [(["192.168.1.0/24"], 0), (["192.168.1.10", "127.0.0.1"], 1), ([], 1)],
)
async def test_wake_from_lets_only_the_listed_addresses_wake_the_desktop(
    whisper_server: WhisperServerStandIn,
    wake_from: list[str],
    packets: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with receive_magic_packets() as receiver:
        waker = Waker(MAC, "127.0.0.1", receiver.port)
        down = f"http://127.0.0.1:{free_port()}"
        async with whisper_failover(
            [down, whisper_server.url], waker=waker, wake_from=wake_from
        ) as (port, _):
            # Whoever asks is answered; only the listed may wake the desktop.
            assert await transcribed(port) == SPOKEN
            await asyncio.sleep(0.3)
        assert len(receiver.packets) == packets
    if not packets:
        assert (
            "the question came from 127.0.0.1, which whisper.wake_from" in caplog.text
        )


async def test_kokoro_waits_for_the_agents_next_words_inside_a_stream(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    """Home Assistant opens the stream before a tool call: the tool's wait is no idling.

    Before a stream and after it, silence past the bound ends the connection.
    """
    kokoro_service.limits = ClientLimits(idle_seconds=0.3)
    async with tcp_server(kokoro_service.handler_factory) as port:
        async with tcp_client(port) as client:
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk(text="Let me check. ").event())
            await asyncio.sleep(0.9)  # the tool runs
            await client.write_event(SynthesizeChunk(text="It is sunny.").event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
            assert events[-1].type == "synthesize-stopped"
            assert not [event for event in events if Error.is_type(event.type)]
            assert await refused(client) == Error(
                text="no event for 0.3 s", code="idle"
            )
        async with tcp_client(port) as idle:
            await answered(idle)
            assert await refused(idle) == Error(text="no event for 0.3 s", code="idle")
    await until(lambda: kokoro_service.limits.connections == 0)
