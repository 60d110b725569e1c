"""Transcribing at a pause, before `audio-stop`, against the real whisper-server.

A counting proxy (tests/harness/whisper_proxy.py) stands between the relay
and whisper-server on Whisper base: it counts the transcriptions asked for
and holds them when a test needs a slow server. The speech is espeak-ng's,
followed by silence as a satellite streams it until Home Assistant's
segmenter ends the command.
"""

import asyncio
from collections.abc import AsyncIterator, Sequence
import contextlib
import logging

from pymicro_vad import MicroVad
import pytest
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioChunkConverter, AudioStart, AudioStop
from wyoming.client import AsyncClient
from wyoming.error import Error

from custom_components.desktop_assistant.text import words
from tests.harness.real_engines import RealWhisperServer, speak
from tests.harness.whisper_proxy import WhisperProxy, proxied
from tests.harness.wyoming import read_until, tcp_client, whisper_wyoming
from wyoming_services.whisper.early import (
    TASK_NAME,
    SpeechPauses,
    speech_probability_of,
)

QUESTION = "What is the weather like in Rome tomorrow?"
BEFORE_PAUSE = "Turn on the light"
AFTER_PAUSE = "in the kitchen please"
WHISPER_TIMEOUT = 60.0  # far above what base takes on a busy 2-core machine
SEGMENTER_SILENCE = 0.7  # Home Assistant's default: then audio-stop
CHUNK_SAMPLES = 1024
# Silence the relay hears as a pause: microVAD still hears speech for a few
# frames after it ends.
PAUSE = 0.5
HELD = 60.0  # a request the proxy holds past any test's end
WAITS = 200  # tenths of a second to wait for the relay to let go


def silence(rate: int, seconds: float) -> bytes:
    """16-bit mono digital silence."""
    return bytes(2 * int(rate * seconds))


async def say(
    client: AsyncClient,
    pieces: Sequence[bytes],
    rate: int,
    *,
    real_time: bool = False,
    stop: bool = True,
) -> None:
    """Stream the audio as Home Assistant does, in real time if asked."""
    await client.write_event(Transcribe(language="en").event())
    await client.write_event(AudioStart(rate=rate, width=2, channels=1).event())
    audio = b"".join(pieces)
    step = CHUNK_SAMPLES * 2
    for offset in range(0, len(audio), step):
        await client.write_event(
            AudioChunk(rate, 2, 1, audio[offset : offset + step]).event()
        )
        if real_time:
            await asyncio.sleep(CHUNK_SAMPLES / rate)
    if stop:
        await client.write_event(AudioStop().event())


async def answer(client: AsyncClient) -> Transcript | Error:
    """The relay's answer to the utterance."""
    event = (await read_until(client, "transcript"))[-1]
    if Error.is_type(event.type):
        return Error.from_event(event)
    return Transcript.from_event(event)


@contextlib.asynccontextmanager
async def relay(
    whisper: RealWhisperServer, delay: float = 0.0, at_pause: bool = True
) -> AsyncIterator[tuple[WhisperProxy, int]]:
    """The relay in front of the counting proxy; yield the proxy and its port."""
    async with (
        proxied(whisper.url, delay) as proxy,
        whisper_wyoming(
            proxy.url, whisper_timeout=WHISPER_TIMEOUT, transcribe_at_pause=at_pause
        ) as port,
    ):
        yield proxy, port


async def held_at_pause(
    client: AsyncClient, proxy: WhisperProxy, audio: bytes, rate: int
) -> None:
    """Say `audio` and a pause, no audio-stop; return once the request arrived."""
    await say(client, [audio, silence(rate, PAUSE)], rate, stop=False)
    await proxy.request_arrived.wait()


def early_tasks() -> list[asyncio.Task]:
    """The relay's requests made at pauses that have not ended."""
    return [
        task
        for task in asyncio.all_tasks()
        if task.get_name() == TASK_NAME and not task.done()
    ]


async def let_go(proxy: WhisperProxy) -> None:
    """Wait until the relay holds no request and the proxy none in flight."""
    for _ in range(WAITS):
        if not early_tasks() and proxy.in_flight == 0:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(
        f"still held: {len(early_tasks())} tasks, {proxy.in_flight} requests"
    )


def answered_with(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Which path answered each utterance, as the relay's log line says."""
    return [
        record.getMessage().split("answered with the transcript asked ")[1]
        for record in caplog.records
        if "answered with the transcript asked" in record.getMessage()
    ]


def assert_answered_once(
    transcript: Transcript | Error,
    proxy: WhisperProxy,
    caplog: pytest.LogCaptureFixture,
    asked: str,
) -> None:
    """The question heard word for word, whisper-server asked once, `asked` logged."""
    assert isinstance(transcript, Transcript), transcript
    assert words(transcript.text) == words(QUESTION)
    assert (proxy.arrived, proxy.answered) == (1, 1)
    (line,) = answered_with(caplog)
    assert line.startswith(asked)


def test_pauses_are_heard_after_speech_only() -> None:
    audio, rate = speak(QUESTION, words_per_minute=140)
    assert rate != 16000  # resampled below, as the relay does
    pcm = _to_16k(audio, rate)
    pauses = SpeechPauses()
    pauses.feed(silence(16000, 0.5))
    assert not pauses.pausing  # silence before any speech is no pause
    pauses.feed(pcm)
    assert not pauses.pausing
    assert pauses.speech_end > len(silence(16000, 0.5))
    pauses.feed(silence(16000, 0.3))
    assert pauses.pausing
    pauses.feed(pcm)
    assert not pauses.pausing


class MicroVad2:
    """pymicro-vad 2's reader, as its `MicroVad` names it (an add-on image installs it)."""

    def __init__(self, installed: MicroVad) -> None:
        self.process_10ms = speech_probability_of(installed)


def test_microvad_is_read_by_either_versions_name() -> None:
    installed = MicroVad()  # Home Assistant's pin, 1.0.1: Process10ms
    silence = bytes(320)
    for vad in (installed, MicroVad2(MicroVad())):
        read = speech_probability_of(vad)
        assert all(read(silence) < 0.5 for _ in range(100))


def test_audio_sent_faster_than_spoken_is_not_read() -> None:
    audio, rate = speak(QUESTION, words_per_minute=140)
    speech = _to_16k(audio, rate)
    now = 0.0
    pauses = SpeechPauses(clock=lambda: now)
    pauses.feed(speech)  # a burst as Home Assistant may hand over: read
    heard = pauses.speech_end
    assert 0 < heard < len(speech)
    # A minute at once is no live speech: taken for speech, not read.
    pauses.feed(silence(16000, 60.0))
    assert pauses.speech_end > len(speech) + len(silence(16000, 59.0))
    assert not pauses.pausing
    # Once the clock has caught up, silence as it comes is a pause again.
    now = 63.0
    pauses.feed(silence(16000, 0.3))
    assert pauses.pausing


@pytest.mark.parametrize(
    ("at_pause", "asked"),
    [(True, "at a pause (1 asked at pauses)"), (False, "at audio-stop (0 asked")],
    ids=["on", "off"],
)
async def test_speech_then_silence_takes_one_request(
    real_whisper: RealWhisperServer,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
    at_pause: bool,
    asked: str,
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    audio, rate = speak(QUESTION)
    async with (
        relay(real_whisper, at_pause=at_pause) as (proxy, port),
        tcp_client(port, WHISPER_TIMEOUT) as client,
    ):
        await say(client, [audio, silence(rate, SEGMENTER_SILENCE)], rate)
        transcript = await answer(client)
        await let_go(proxy)
    assert_answered_once(transcript, proxy, caplog, asked)


async def test_speech_after_a_pause_is_transcribed_whole(
    real_whisper: RealWhisperServer,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    before, rate = speak(BEFORE_PAUSE)
    after, _ = speak(AFTER_PAUSE)
    pieces = [before, silence(rate, 0.6), after, silence(rate, SEGMENTER_SILENCE)]
    async with (
        relay(real_whisper) as (proxy, port),
        tcp_client(port, WHISPER_TIMEOUT) as client,
    ):
        await say(client, pieces, rate, real_time=True)
        transcript = await answer(client)
        await let_go(proxy)
    assert isinstance(transcript, Transcript), transcript
    heard = words(transcript.text)
    # Whisper base may run "in the" together; the words either side stand.
    assert {"light", "kitchen", "please"} <= set(heard), heard
    assert heard.index("light") < heard.index("kitchen"), heard
    # One request at each pause; the first was cancelled or thrown away.
    (line,) = answered_with(caplog)
    assert line == "at a pause (2 asked at pauses)"
    assert proxy.arrived == 2
    assert proxy.answered + proxy.abandoned == 2


async def test_audio_stop_while_a_slow_server_transcribes(
    real_whisper: RealWhisperServer,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    audio, rate = speak(QUESTION)
    async with (
        relay(real_whisper, delay=1.0) as (proxy, port),
        tcp_client(port, WHISPER_TIMEOUT) as client,
    ):
        await held_at_pause(client, proxy, audio, rate)
        await client.write_event(AudioStop().event())  # while the proxy holds it
        transcript = await answer(client)
        await let_go(proxy)
    # Not asked again behind the slow one.
    assert_answered_once(transcript, proxy, caplog, "at a pause (1 asked at pauses)")


async def test_a_server_that_dies_during_the_request_gives_the_usual_error(
    real_whisper: RealWhisperServer, socket_enabled: None
) -> None:
    audio, rate = speak(QUESTION)
    async with (
        relay(real_whisper, delay=HELD) as (proxy, port),
        tcp_client(port, WHISPER_TIMEOUT) as client,
    ):
        await held_at_pause(client, proxy, audio, rate)
        await proxy.stop()  # the server dies with the request; nothing listens
        await client.write_event(AudioStop().event())
        fault = await answer(client)
        # The connection goes on: the next utterance finds no server either.
        await say(client, [audio, silence(rate, SEGMENTER_SILENCE)], rate)
        refused = await answer(client)
        await let_go(proxy)
    assert isinstance(fault, Error), fault
    assert fault.code == "whisper-server"
    assert isinstance(refused, Error), refused
    assert refused.code == "whisper-server"
    assert "unreachable" in (refused.text or "")
    assert proxy.arrived == 1


async def test_a_client_that_leaves_during_the_request_leaves_nothing_behind(
    real_whisper: RealWhisperServer, socket_enabled: None
) -> None:
    audio, rate = speak(QUESTION)
    async with relay(real_whisper, delay=HELD) as (proxy, port):
        async with tcp_client(port, WHISPER_TIMEOUT) as client:
            await held_at_pause(client, proxy, audio, rate)
            assert len(early_tasks()) == 1
        await let_go(proxy)  # the client left: the relay cancels its request
        assert (proxy.arrived, proxy.abandoned) == (1, 1)


def _to_16k(pcm: bytes, rate: int) -> bytes:
    """Resample 16-bit mono PCM to 16 kHz, as the relay's converter does."""
    converter = AudioChunkConverter(rate=16000, width=2, channels=1)
    return converter.convert(AudioChunk(rate, 2, 1, pcm)).audio
