"""wyoming-kokoro against text too long to speak in one go and malformed events.

Over real Wyoming TCP connections to the tiny model of scripts/make-test-models,
where every phoneme Kokoro reads becomes exactly 10 ms (240 samples) of
audio: the length of the audio tells how many phonemes were spoken.
"""

import asyncio
from pathlib import Path
import sys
import time

import numpy as np
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
from wyoming_services.kokoro.__main__ import (
    SWITCH_INTERVAL,
    KokoroService,
    build_service,
)
from wyoming_services.kokoro.engine import MAX_PHONEMES

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


async def test_100000_characters_in_10_character_chunks(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    """Text without a sentence boundary, streamed: linear time, a loop that
    never stalls over 50 ms, and all of it spoken.

    A stall is counted in the loop thread's own CPU time between two ticks:
    on this shared machine the wall clock also counts the time other
    processes hold the cores. Linear time: the second half of the text is
    taken as fast as the first (quadratic splitting would take three times
    as long).
    """
    words = " ".join(WORDS[i % len(WORDS)] for i in range(20_000))
    text = words[:100_000]
    busy: list[float] = []
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            before, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0.005)
            lags.append(time.perf_counter() - before - 0.005)
            busy.append(time.thread_time() - cpu)

    marks: list[float] = []

    async def write(client: AsyncClient) -> None:
        await client.write_event(SynthesizeStart(voice=EN).event())
        for start in range(0, len(text), 10):
            if start % (len(text) // 2) == 0:
                marks.append(time.perf_counter())
            await client.write_event(
                SynthesizeChunk(text=text[start : start + 10]).event()
            )
            # A write to a socket with room never yields; the probe would
            # time this client, not the server.
            await asyncio.sleep(0)
        marks.append(time.perf_counter())
        await client.write_event(SynthesizeStop().event())

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)  # as the server runs
    tick = asyncio.create_task(ticker())
    try:
        async with (
            tcp_server(kokoro_service.handler_factory) as port,
            tcp_client(port) as client,
        ):
            writer = asyncio.create_task(write(client))
            samples = 0
            while (event := await client.read_event()) is not None:
                if event.type == "audio-chunk":
                    samples += len(event.payload or b"") // 2
                if event.type in ("synthesize-stopped", "error"):
                    break
            await writer
            seconds = time.perf_counter() - marks[0]
            assert event is not None and event.type == "synthesize-stopped"
            assert await speaks(client)
    finally:
        done.set()
        await tick
        sys.setswitchinterval(switch_interval)

    first_half, second_half = marks[1] - marks[0], marks[2] - marks[1]
    report = (
        f"{seconds:.1f} s in all, halves {first_half:.1f} s and {second_half:.1f} s; "
        f"loop busy at most {max(busy) * 1000:.0f} ms, late at most "
        f"{max(lags) * 1000:.0f} ms (p99 {np.percentile(lags, 99) * 1000:.0f} ms)"
    )
    assert max(busy) < 0.050, report
    assert second_half < 2 * first_half, report
    assert seconds < 120, report
    # Most of it is speech: about one phoneme per character.
    assert samples / SAMPLES_PER_PHONEME > 0.7 * len(text)


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
    # Right after the [kokoro] table's keys.
    config = write_kokoro_config(
        tmp_path, tiny_models, "max_characters = 20\n" + KOKORO_VOICES
    )
    service = build_service(load_config(config))
    try:
        async with (
            tcp_server(service.handler_factory) as port,
            tcp_client(port) as client,
        ):
            events = await speak_once(client, "Twenty characters ok")
            assert events[-1].type == "audio-stop"
            (event,) = await speak_once(client, "Twenty-one characters")
            assert Error.from_event(event).code == "text-too-long"
            # Streamed text is spoken as it comes; what waits to be spoken is
            # held to the same limit, so text faster than speech cannot pile up.
            await client.write_event(SynthesizeStart(voice=EN).event())
            await client.write_event(SynthesizeChunk(text="Twenty ").event())
            await client.write_event(SynthesizeChunk(text="characters ok").event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
            assert events[-1].type == "synthesize-stopped"
            await client.write_event(SynthesizeStart(voice=EN).event())
            await client.write_event(SynthesizeChunk(text=long_text(30)).event())
            (*_, event) = await read_until(client, "synthesize-stopped")
            assert Error.from_event(event).code == "text-too-long"
            # What follows of that stream is ignored; the connection still speaks.
            await client.write_event(SynthesizeChunk(text="More. ").event())
            await client.write_event(SynthesizeStop().event())
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
