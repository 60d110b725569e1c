"""wyoming-kokoro on the real Kokoro v1.0 model (int8), over real Wyoming
connections. Skipped, loudly, when scripts/setup did not assemble the model.

The model synthesises at about real time on a small machine: the texts are
short and the waits long.
"""

from collections.abc import Iterator
import logging
from pathlib import Path
import re

import numpy as np
import pytest
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from tests.harness.real_engines import write_real_kokoro_config
from tests.harness.wyoming import pcm_of, read_until, tcp_client, tcp_server
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import KokoroService, build_service
from wyoming_services.kokoro.engine import RATE
from wyoming_services.kokoro.splitter import MAX_HELD

# Speech runs at 120 to 180 words a minute; a factor of two either side of
# 150 allows for the voice and the language.
WORDS_PER_MINUTE = 150
ENGLISH = "The kitchen lights are on and the front door is locked."
ITALIAN = "Le luci della cucina sono accese e la porta è chiusa."
SLOW = 120.0  # seconds: the model on two busy cores


@pytest.fixture
def real_kokoro(tmp_path: Path) -> Iterator[KokoroService]:
    """The service on the real model (its thread may not outlive a test)."""
    config = write_real_kokoro_config(tmp_path)
    service = build_service(load_config(config))
    try:
        yield service
    finally:
        service.close()


def expected_seconds(text: str) -> float:
    return len(re.findall(r"\w+", text)) / WORDS_PER_MINUTE * 60


def loudness(samples: np.ndarray) -> float:
    """Root mean square, as a fraction of full scale."""
    return float(np.sqrt(np.mean((samples.astype(np.float64) / 32768) ** 2)))


@pytest.mark.parametrize(("voice", "text"), [("en", ENGLISH), ("it", ITALIAN)])
async def test_sentence_gives_speech_of_plausible_length(
    real_kokoro: KokoroService, socket_enabled: None, voice: str, text: str
) -> None:
    async with (
        tcp_server(real_kokoro.handler_factory) as port,
        tcp_client(port) as client,
    ):
        client.read_timeout = SLOW
        voice_asked = SynthesizeVoice(name=voice)
        await client.write_event(Synthesize(text=text, voice=voice_asked).event())
        events = await read_until(client, "audio-stop")

    assert events[-1].type == "audio-stop"
    samples = pcm_of(events)
    seconds = len(samples) / RATE
    estimate = expected_seconds(text)
    assert estimate / 2 <= seconds <= estimate * 2
    # Speech, not silence or a click: loud on average, and in most of it.
    assert loudness(samples) > 0.02
    frames = samples[: len(samples) // 2400 * 2400].reshape(-1, 2400)
    voiced = np.mean([loudness(frame) > 0.01 for frame in frames])
    assert voiced > 0.5


async def stream_in_two(
    service: KokoroService, words: list[str], until: str, then: str
) -> tuple[list, list]:
    """Stream `words`, read up to the first `until`; then write `then` and stop.

    The events before and after.
    """
    async with (
        tcp_server(service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        client.read_timeout = SLOW
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice("en")).event())
        for word in words:
            await client.write_event(SynthesizeChunk(text=word + " ").event())
        # Nothing more is written until audio comes.
        first = await read_until(client, until)
        await client.write_event(SynthesizeChunk(text=then).event())
        await client.write_event(SynthesizeStop().event())
        return first, await read_until(client, "synthesize-stopped")


async def test_streaming_speaks_before_the_last_sentence_is_written(
    real_kokoro: KokoroService, socket_enabled: None
) -> None:
    words = ["Sure,", "the", "lights", "are", "on.", "The", "door"]
    first, rest = await stream_in_two(real_kokoro, words, "audio-chunk", "is locked.")
    assert first[-1].type == "audio-chunk"
    events = first + rest
    assert events[-1].type == "synthesize-stopped"
    seconds = len(pcm_of(events)) / RATE
    text = "Sure, the lights are on. The door is locked."
    assert expected_seconds(text) / 2 <= seconds <= expected_seconds(text) * 2


async def test_auto_voice_switches_language_per_sentence(
    real_kokoro: KokoroService,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    text = f"{ITALIAN} {ENGLISH}"
    async with (
        tcp_server(real_kokoro.handler_factory) as port,
        tcp_client(port) as client,
    ):
        client.read_timeout = SLOW
        auto = SynthesizeVoice(name="auto")
        await client.write_event(Synthesize(text=text, voice=auto).event())
        events = await read_until(client, "audio-stop")

    assert events[-1].type == "audio-stop"
    (line,) = [r.getMessage() for r in caplog.records if r.message.startswith("spoke")]
    # "Le luci della cucina" "sono accese" "e la porta è chiusa."
    # "The kitchen lights are on" "and the front door is locked."
    assert line.startswith("spoke 5 piece(s)")
    seconds = len(pcm_of(events)) / RATE
    assert expected_seconds(text) / 2 <= seconds <= expected_seconds(text) * 2


async def test_the_first_piece_is_speech_of_its_words_length(
    real_kokoro: KokoroService, socket_enabled: None
) -> None:
    """Streamed word by word, "It is sunny" is heard first, as three words."""
    words = ["It", "is", "sunny", "in", "Rome"]
    first, rest = await stream_in_two(real_kokoro, words, "audio-stop", "today.")
    assert first[-1].type == "audio-stop"
    assert rest[-1].type == "synthesize-stopped"
    samples = pcm_of(first)
    seconds = len(samples) / RATE
    estimate = expected_seconds("It is sunny")
    assert estimate / 2 <= seconds <= estimate * 2
    assert loudness(samples) > 0.02
    # The rest of the sentence follows: "in Rome today."
    rest_seconds = len(pcm_of(rest)) / RATE
    assert expected_seconds("in Rome today") / 2 <= rest_seconds


async def test_a_cached_piece_is_the_audio_the_model_gives_afresh(
    real_kokoro: KokoroService, socket_enabled: None
) -> None:
    text = "One moment, please."
    voice = SynthesizeVoice(name="en")
    async with (
        tcp_server(real_kokoro.handler_factory) as port,
        tcp_client(port) as client,
    ):
        client.read_timeout = SLOW
        heard = []
        for _ in range(2):
            await client.write_event(Synthesize(text=text, voice=voice).event())
            heard.append(pcm_of(await read_until(client, "audio-stop")).tobytes())
    assert real_kokoro.engine.cache.report().hits == 1
    fresh = real_kokoro.engine.synthesise(text, real_kokoro.voices.catalog.get("en"))
    assert heard[0] == heard[1] == fresh.pcm
    assert len(fresh.pcm) > 0


LIMIT = 60  # characters that may wait to be spoken, in the test below


@pytest.fixture
def limited_kokoro(tmp_path: Path) -> Iterator[KokoroService]:
    """The real model with `max_characters` at LIMIT."""
    config = write_real_kokoro_config(tmp_path, f"max_characters = {LIMIT}\n")
    service = build_service(load_config(config))
    try:
        yield service
    finally:
        service.close()


async def test_streamed_text_longer_than_the_limit_is_spoken_whole(
    limited_kokoro: KokoroService,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Text written in 10-character chunks at once, over three times the
    limit of what may wait: the server reads it as speech catches up, and
    all of it is heard."""
    caplog.set_level(logging.INFO, "wyoming_services")
    text = " ".join([ENGLISH, "It will rain in Rome tomorrow afternoon.", ENGLISH])
    text += " The heating stays at twenty degrees until the evening."
    assert len(text) > 3 * LIMIT
    async with (
        tcp_server(limited_kokoro.handler_factory) as port,
        tcp_client(port) as client,
    ):
        client.read_timeout = SLOW
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice("en")).event())
        for start in range(0, len(text), 10):
            chunk = SynthesizeChunk(text=text[start : start + 10])
            await client.write_event(chunk.event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")

    assert events[-1].type == "synthesize-stopped"
    seconds = len(pcm_of(events)) / RATE
    assert expected_seconds(text) / 2 <= seconds <= expected_seconds(text) * 2
    (record,) = [r for r in caplog.records if r.getMessage().startswith("streamed")]
    assert LIMIT < record.most_waiting <= LIMIT + 10 + MAX_HELD
