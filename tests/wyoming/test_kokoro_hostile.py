"""wyoming-kokoro against text too long to speak in one go and malformed events.

Over real Wyoming TCP connections to the tiny model of scripts/make-test-models,
where every phoneme Kokoro reads becomes exactly 10 ms (240 samples) of
audio: the length of the audio tells how many phonemes were spoken.
"""

import asyncio
import logging
from pathlib import Path

import pytest
from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from tests.harness.wyoming import (
    KOKORO_VOICES,
    handler_tasks,
    pcm_of,
    read_until,
    tcp_client,
    tcp_server,
    write_kokoro_config,
)
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import KokoroService, build_service
from wyoming_services.kokoro.engine import MAX_PHONEMES
from wyoming_services.kokoro.splitter import MAX_HELD, TextSplitter

SAMPLES_PER_PHONEME = 240
EN = SynthesizeVoice(name="en")
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "while",
    "seven",
    "bright",
    "kites",
    "drift",
    "above",
    "the",
    "quiet",
    "harbour",
    "and",
    "children",
    "laugh",
]


def long_text(words: int, every: int = 0) -> str:
    """`words` words, with a comma after every `every`-th (0: none)."""
    picked = [WORDS[i % len(WORDS)] for i in range(words)]
    if every:
        picked = [w + "," if (i + 1) % every == 0 else w for i, w in enumerate(picked)]
    return " ".join(picked) + "."


def phonemes_of(service: KokoroService, text: str) -> str:
    voice = service.voices.resolve(EN)
    return service.engine.phonemizer(text, voice.lang)


async def speak_once(client: AsyncClient, text: str) -> list[Event]:
    await client.write_event(Synthesize(text=text, voice=EN).event())
    return await read_until(client, "audio-stop")


async def speaks(client: AsyncClient) -> bool:
    """A short one-shot request on `client` gets audio."""
    events = await speak_once(client, "Hello there.")
    return events[-1].type == "audio-stop" and len(pcm_of(events)) > 0


@pytest.mark.parametrize(
    "text",
    [
        long_text(160),
        long_text(160, every=7),
        long_text(400),
        # 350 characters, over 2000 phonemes: numbers are read out in words.
        " ".join(["7351"] * 70) + ".",
    ],
    ids=["no-comma", "commas", "long", "numbers"],
)
async def test_sentence_longer_than_kokoros_window_is_spoken_whole(
    kokoro_service: KokoroService, socket_enabled: None, text: str
) -> None:
    phonemes = phonemes_of(kokoro_service, text)
    assert len(phonemes) > MAX_PHONEMES + 10
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        events = await speak_once(client, text)
        assert [e.type for e in events if e.type != "audio-chunk"] == [
            "audio-start",
            "audio-stop",
        ]
        samples = len(pcm_of(events))
        # Every phoneme but the spaces where the text was cut is spoken.
        # Kokoro reads a pad before and after each piece (clause or part).
        spoken = samples / SAMPLES_PER_PHONEME
        assert spoken == pytest.approx(len(phonemes), abs=50)
        assert await speaks(client)


async def test_long_streamed_sentence_is_spoken_whole(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    text = long_text(160)
    phonemes = phonemes_of(kokoro_service, text)
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(SynthesizeStart(voice=EN).event())
        for word in text.split(" "):
            await client.write_event(SynthesizeChunk(text=word + " ").event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
        assert events[-1].type == "synthesize-stopped"
        # Spoken in parts (cut between words), each part whole.
        spoken = len(pcm_of(events)) / SAMPLES_PER_PHONEME
        assert spoken == pytest.approx(len(phonemes), abs=40)
        assert await speaks(client)


def service_with_limit(folder: Path, models: Path, limit: int) -> KokoroService:
    """The tiny model with `max_characters` set (right after [kokoro]'s keys)."""
    config = write_kokoro_config(
        folder, models, f"max_characters = {limit}\n" + KOKORO_VOICES
    )
    return build_service(load_config(config))


def most_waiting(caplog: pytest.LogCaptureFixture) -> list[int]:
    """The most characters that waited to be spoken, per streamed request."""
    return [
        record.most_waiting
        for record in caplog.records
        if record.getMessage().startswith("streamed")
    ]


def test_splitter_holds_a_bounded_text_whatever_the_length() -> None:
    """Linear time: each chunk is searched together with at most MAX_HELD
    characters held before it, however long the text runs without a
    sentence end, and nothing of the text is lost."""
    text = " ".join(WORDS[i % len(WORDS)] for i in range(20_000))[:100_000]
    splitter = TextSplitter()
    given: list[str] = []
    longest_held = 0
    for start in range(0, len(text), 10):
        given += splitter.add(text[start : start + 10])
        longest_held = max(longest_held, len(splitter.held))
    given.append(splitter.finish())
    assert longest_held <= MAX_HELD
    assert " ".join(given).split() == text.split()


async def test_100000_characters_in_10_character_chunks_are_all_spoken(
    tmp_path: Path,
    tiny_models: Path,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Text written far faster than it is spoken, without a sentence end: all
    of it is heard, what waits in the server stays near the limit (the rest
    waits in the socket), and another client is answered meanwhile."""
    caplog.set_level(logging.INFO, "wyoming_services")
    text = " ".join(WORDS[i % len(WORDS)] for i in range(20_000))[:100_000]
    limit = 1000
    service = service_with_limit(tmp_path, tiny_models, limit)
    order: list[str] = []

    async def write(client: AsyncClient) -> None:
        await client.write_event(SynthesizeStart(voice=EN).event())
        for start in range(0, len(text), 10):
            await client.write_event(
                SynthesizeChunk(text=text[start : start + 10]).event()
            )
        await client.write_event(SynthesizeStop().event())

    async def ask_meanwhile(port: int) -> None:
        async with tcp_client(port) as other:
            assert await speaks(other)
        order.append("other client answered")

    try:
        async with (
            tcp_server(service.handler_factory) as port,
            tcp_client(port) as client,
        ):
            writer = asyncio.create_task(write(client))
            other: asyncio.Task | None = None
            samples = 0
            while (event := await client.read_event()) is not None:
                if event.type == "audio-chunk":
                    samples += len(event.payload or b"") // 2
                    other = other or asyncio.create_task(ask_meanwhile(port))
                if event.type in ("synthesize-stopped", "error"):
                    break
            order.append("stream spoken")
            await writer
            assert other is not None
            await other
            assert event is not None and event.type == "synthesize-stopped"
            assert await speaks(client)
    finally:
        service.close()

    # The other client was answered while the long text was being spoken.
    assert order == ["other client answered", "stream spoken"]
    # Most of it is speech: about one phoneme per character.
    assert samples / SAMPLES_PER_PHONEME > 0.7 * len(text)
    # The server held back: at most the limit, one chunk and one cut held.
    (peak, *_) = most_waiting(caplog)
    assert limit < peak <= limit + 10 + MAX_HELD


async def test_one_shot_text_over_the_limit_is_refused(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(Synthesize(text="a" * 10_001, voice=EN).event())
        (event,) = await read_until(client, "audio-stop")
        assert Error.from_event(event) == Error(
            text="text of 10001 characters is longer than the limit of 10000",
            code="text-too-long",
        )
        assert await speaks(client)


async def test_limit_is_an_option(
    tmp_path: Path, tiny_models: Path, socket_enabled: None
) -> None:
    service = service_with_limit(tmp_path, tiny_models, 20)
    try:
        async with (
            tcp_server(service.handler_factory) as port,
            tcp_client(port) as client,
        ):
            events = await speak_once(client, "Twenty characters ok")
            assert events[-1].type == "audio-stop"
            (event,) = await speak_once(client, "Twenty-one characters")
            assert Error.from_event(event).code == "text-too-long"
            # Streamed text is spoken as it comes, however long.
            await client.write_event(SynthesizeStart(voice=EN).event())
            await client.write_event(SynthesizeChunk(text="Twenty ").event())
            await client.write_event(SynthesizeChunk(text="characters ok").event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
            assert events[-1].type == "synthesize-stopped"
            # Streamed text over the limit waits to be read, and is all spoken.
            text = long_text(30)
            await client.write_event(SynthesizeStart(voice=EN).event())
            await client.write_event(SynthesizeChunk(text=text).event())
            await client.write_event(SynthesizeChunk(text=" More.").event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
            assert events[-1].type == "synthesize-stopped"
            spoken = len(pcm_of(events)) / SAMPLES_PER_PHONEME
            phonemes = phonemes_of(service, text + " More.")
            assert spoken == pytest.approx(len(phonemes), abs=40)
            assert await speaks(client)
    finally:
        service.close()


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            Event("synthesize", {"text": 5}),
            "bad synthesize event: text must be a string",
        ),
        (Event("synthesize", {}), "bad synthesize event: text must be a string"),
        (
            Event("synthesize", {"text": "Hi.", "voice": "en"}),
            "bad synthesize event: voice must be an object with a name or language",
        ),
        (
            Event("synthesize", {"text": "Hi.", "voice": {"name": ["en"]}}),
            "bad synthesize event: voice must be an object with a name or language",
        ),
        (
            Event("synthesize-start", {"voice": 1}),
            "bad synthesize-start event: voice must be an object",
        ),
        (
            Event("synthesize-chunk", {"text": None}),
            "bad synthesize-chunk event: text must be a string",
        ),
    ],
)
async def test_event_with_bad_fields_is_an_error_and_the_connection_goes_on(
    kokoro_service: KokoroService, socket_enabled: None, event: Event, message: str
) -> None:
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        tasks = handler_tasks()
        await client.write_event(event)
        (answer,) = await read_until(client, "audio-stop")
        error = Error.from_event(answer)
        assert error.code == "bad-event"
        assert error.text.startswith(message)
        assert await speaks(client)
    await asyncio.wait(tasks, timeout=10)
    assert all(t.done() and t.exception() is None for t in tasks)


async def test_oversized_event_closes_the_connection_with_an_error(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with tcp_server(kokoro_service.handler_factory) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b'{"type": "synthesize", "data_length": 5000000000}\n')
        await writer.drain()
        answer = await async_read_event(reader)
        closed = await reader.read() == b""
        writer.close()
        async with tcp_client(port) as client:
            assert await speaks(client)
    assert answer is not None
    assert Error.from_event(answer) == Error(
        text="data_length 5000000000 is over the limit of 1048576", code="bad-event"
    )
    assert closed
