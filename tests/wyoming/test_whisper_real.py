"""The relay against the real whisper-server on Whisper base.

scripts/setup builds whisper-server and converts the model once per machine;
without them these tests skip and the test run says so at its end. The
questions are spoken by espeak-ng.
"""

import logging
from pathlib import Path

import pytest
from wyoming.asr import Transcript

from custom_components.desktop_assistant.text import words
from tests.harness.real_engines import (
    SHORT_CLIPS,
    RealWhisperServer,
    speak,
    start_whisper_server,
)
from tests.harness.wyoming import (
    read_until,
    send_utterance,
    tcp_client,
    whisper_failover,
    whisper_wyoming,
)

QUESTION = "What is the weather like in Rome tomorrow?"
# Far above what base takes for a short question on a busy 2-core machine.
WHISPER_TIMEOUT = 60.0


async def transcribe(port: int, audio: bytes, rate: int, language: str) -> Transcript:
    """Send the audio as Home Assistant does; the transcript that comes back."""
    async with tcp_client(port) as client:
        await send_utterance(client, audio, rate=rate, language=language)
        event = (await read_until(client, "transcript"))[-1]
    assert Transcript.is_type(event.type), event
    return Transcript.from_event(event)


async def test_a_spoken_question_is_transcribed(
    real_whisper: RealWhisperServer, socket_enabled: None
) -> None:
    audio, rate = speak(QUESTION)
    async with whisper_wyoming(
        real_whisper.url, whisper_timeout=WHISPER_TIMEOUT
    ) as port:
        transcript = await transcribe(port, audio, rate, "en")
    assert words(transcript.text) == words(QUESTION)
    assert transcript.language == "en"


@pytest.mark.parametrize(
    ("sentence", "voice", "expected"),
    [
        ("Buongiorno, come stai?", "it", ["come", "stai"]),
        # Whisper would detect English here: the language asked for decides.
        (QUESTION, "en", None),
    ],
    ids=["italian", "english-asked-as-italian"],
)
async def test_the_language_asked_for_is_kept(
    real_whisper: RealWhisperServer,
    socket_enabled: None,
    sentence: str,
    voice: str,
    expected: list[str] | None,
) -> None:
    audio, rate = speak(sentence, voice, words_per_minute=120)
    async with whisper_wyoming(
        real_whisper.url, whisper_timeout=WHISPER_TIMEOUT
    ) as port:
        transcript = await transcribe(port, audio, rate, "it")
    assert transcript.language == "it"
    assert transcript.text
    if expected is not None:
        assert words(transcript.text)[-len(expected) :] == expected


async def test_the_second_real_server_answers_when_the_first_is_stopped(
    real_whisper: RealWhisperServer,
    socket_enabled: None,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    audio, rate = speak(QUESTION)
    with start_whisper_server(tmp_path, *SHORT_CLIPS) as first:
        urls = [first.url, real_whisper.url]
        async with whisper_failover(urls, whisper_timeout=WHISPER_TIMEOUT) as (
            port,
            servers,
        ):
            assert servers.up == {first.url: True, real_whisper.url: True}
            before = await transcribe(port, audio, rate, "en")
            first.stop()  # the desktop goes to sleep
            after = await transcribe(port, audio, rate, "en")
            assert servers.up[first.url] is False
    assert words(before.text) == words(QUESTION)
    assert words(after.text) == words(QUESTION)
    answered = [r.getMessage() for r in caplog.records if "transcribed" in r.message]
    assert len(answered) == 2
    assert f"(whisper-server at {first.url} " in answered[0]
    assert f"(whisper-server at {real_whisper.url} " in answered[1]
