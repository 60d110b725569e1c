"""Pieces spoken before come from a bounded cache: the same audio as a fresh
synthesis, filled on first use and from `phrases` at start, never over its
cap in bytes. The tiny model from scripts/make-test-models speaks.
"""

import logging
from pathlib import Path

import numpy as np
import pytest
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeVoice

from tests.harness.wyoming import (
    KOKORO_VOICES,
    pcm_of,
    read_until,
    tcp_client,
    tcp_server,
    write_kokoro_config,
)
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import KokoroService, build_service
from wyoming_services.kokoro.cache import MAX_CACHED_CHARACTERS, PhraseCache

ANNOUNCEMENT = "One moment, I am checking the calendar."
EN = SynthesizeVoice(name="en")


def service_with(tmp_path: Path, tiny_models: Path, options: str) -> KokoroService:
    """The service on the tiny model with `[kokoro]` options added."""
    tmp_path.mkdir(exist_ok=True)
    return build_service(
        load_config(write_kokoro_config(tmp_path, tiny_models, options + KOKORO_VOICES))
    )


async def speak(service: KokoroService, text: str, voice: SynthesizeVoice) -> bytes:
    async with (
        tcp_server(service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(Synthesize(text=text, voice=voice).event())
        return pcm_of(await read_until(client, "audio-stop")).tobytes()


def cache_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.message.startswith("spoke")]


@pytest.mark.parametrize("voice", [EN, SynthesizeVoice(name="auto")])
async def test_a_cache_hit_is_the_audio_of_a_fresh_synthesis(
    tmp_path: Path,
    tiny_models: Path,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
    voice: SynthesizeVoice,
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    cached = service_with(tmp_path / "a", tiny_models, "")
    uncached = service_with(tmp_path / "b", tiny_models, "cache_mb = 0\n")
    try:
        first = await speak(cached, ANNOUNCEMENT, voice)
        again = await speak(cached, ANNOUNCEMENT, voice)
        fresh = await speak(uncached, ANNOUNCEMENT, voice)
        fresh_again = await speak(uncached, ANNOUNCEMENT, voice)
    finally:
        cached.close()
        uncached.close()
    assert len(first) > 0
    assert first == again == fresh == fresh_again
    hits = [line.rsplit(", ", 1)[-1] for line in cache_lines(caplog)]
    assert hits == [
        "0 piece(s) from the cache",
        "1 piece(s) from the cache",
        "0 piece(s) from the cache",
        "0 piece(s) from the cache",
    ]


async def test_phrases_are_spoken_at_start_and_streamed_from_the_cache(
    tmp_path: Path,
    tiny_models: Path,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An announcement before a tool call: no pause to wait for, no synthesis."""
    caplog.set_level(logging.INFO, "wyoming_services")
    options = f'phrases = ["{ANNOUNCEMENT}", "  ", "Done."]\n'
    service = service_with(tmp_path, tiny_models, options)
    try:
        (start,) = [r.getMessage() for r in caplog.records if "at start" in r.message]
        assert "3 phrase(s) spoken at start" in start  # the warm-up and two
        # The warm-up's two ("Good morning, the kitchen lights" "are on.").
        assert "4 piece(s)" in start
        async with (
            tcp_server(service.handler_factory) as port,
            tcp_client(port) as client,
        ):
            await client.write_event(SynthesizeStart(voice=EN).event())
            for word in ANNOUNCEMENT.split(" "):
                await client.write_event(SynthesizeChunk(text=f"{word} ").event())
            # No SynthesizeStop: the tool runs. The announcement is heard.
            events = await read_until(client, "audio-stop")
    finally:
        service.close()
    assert events[-1].type == "audio-stop"
    assert service.engine.cache.report().hits == 1


def test_the_cap_holds_under_10000_different_pieces(
    kokoro_service: KokoroService,
) -> None:
    engine = kokoro_service.engine
    voice = kokoro_service.voices.catalog.voices["en"]
    cap = 256 * 1024
    engine.cache = PhraseCache(cap)
    sizes = []
    for number in range(10000):
        engine.synthesise(f"Number {number}.", voice)
        sizes.append(engine.cache.report().size)
    report = engine.cache.report()
    assert max(sizes) <= cap
    assert report.size > cap // 2  # full, not emptied
    # The newest are kept, the oldest dropped.
    assert engine.cache.holds("en", "Number 9999.")
    assert not engine.cache.holds("en", "Number 0.")
    assert report.pieces < 10000


def test_long_pieces_and_a_zero_cap_keep_nothing() -> None:
    audio = bytes(1000)
    cache = PhraseCache(10_000)
    cache.put("en", "x" * (MAX_CACHED_CHARACTERS + 1), audio)
    cache.put("en", "short", bytes(20_000))  # over the cap alone
    assert cache.report().pieces == 0
    empty = PhraseCache(0)
    empty.put("en", "short", audio)
    assert empty.get("en", "short") is None


def test_cache_report_counts_what_it_holds() -> None:
    cache = PhraseCache(1 << 20)
    cache.put("en", " Hello. ", np.zeros(100, dtype="<i2").tobytes())
    assert cache.get("en", "Hello.") is not None
    assert cache.get("it", "Hello.") is None
    assert str(cache.report()) == (
        "1 piece(s), 0 KiB of 1024 KiB, 1 hit(s), 1 miss(es)"
    )
