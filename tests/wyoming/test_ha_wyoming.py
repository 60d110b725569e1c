"""Home Assistant's own `wyoming` integration, set up against both servers."""

import asyncio
from collections.abc import AsyncIterator
import io
import wave

from homeassistant.components import stt, tts
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import numpy as np
import pytest

from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import (
    add_wyoming_entry,
    entity_id_of,
    tcp_server,
    tone,
    whisper_wyoming,
)
from wyoming_services.kokoro.__main__ import KokoroService

THREE_SENTENCES = [
    "Buongiorno, oggi piove a Roma. ",
    "Tomorrow the sun will shine in London. ",
    "Domani invece ci sarà il sole a Milano.",
]
WAV_HEADER = 44


@pytest.fixture(autouse=True)
async def core(hass: HomeAssistant) -> None:
    """HA's core component, which `conversation` (a dependency) expects."""
    assert await async_setup_component(hass, "homeassistant", {})


async def test_stt_entity_transcribes(
    hass: HomeAssistant, whisper_server: WhisperServerStandIn
) -> None:
    async with whisper_wyoming(whisper_server.url) as port:
        entry = await add_wyoming_entry(hass, port)
        entity = stt.async_get_speech_to_text_entity(
            hass, entity_id_of(hass, entry, "stt")
        )
        assert entity is not None
        assert {"it", "en"} <= set(entity.supported_languages)

        async def audio() -> AsyncIterator[bytes]:
            pcm = tone(16000, 2, 1)
            for offset in range(0, len(pcm), 2048):
                yield pcm[offset : offset + 2048]

        metadata = stt.SpeechMetadata(
            language="it",
            format=stt.AudioFormats.WAV,
            codec=stt.AudioCodecs.PCM,
            bit_rate=stt.AudioBitRates.BITRATE_16,
            sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
            channel=stt.AudioChannels.CHANNEL_MONO,
        )
        result = await entity.async_process_audio_stream(metadata, audio())
        assert await hass.config_entries.async_unload(entry.entry_id)

    assert result == stt.SpeechResult(
        "Accendi la luce in cucina.", stt.SpeechResultState.SUCCESS
    )
    assert whisper_server.requests[0].parts["language"] == "it"


async def test_tts_entity_streams_three_sentences(
    hass: HomeAssistant, kokoro_service: KokoroService, socket_enabled: None
) -> None:
    async with tcp_server(kokoro_service.handler_factory) as port:
        entry = await add_wyoming_entry(hass, port)
        entity_id = entity_id_of(hass, entry, "tts")
        stream = tts.async_create_stream(
            hass, entity_id, "it", {"voice": "auto", "preferred_format": "wav"}
        )
        assert stream.supports_streaming_input

        first_audio = asyncio.Event()

        async def reply() -> AsyncIterator[str]:
            """An LLM's reply: the rest waits until the first sentence is heard."""
            yield THREE_SENTENCES[0]
            yield "Tomorrow"
            await asyncio.wait_for(first_audio.wait(), 120)
            yield THREE_SENTENCES[1].removeprefix("Tomorrow")
            yield THREE_SENTENCES[2]

        stream.async_set_message_stream(reply())
        received = b""
        async for data in stream.async_stream_result():
            received += data
            if len(received) > WAV_HEADER:
                first_audio.set()
        assert await hass.config_entries.async_unload(entry.entry_id)

    with wave.open(io.BytesIO(received[:WAV_HEADER])) as header:
        assert (header.getframerate(), header.getsampwidth()) == (24000, 2)
        assert header.getnchannels() == 1
    samples = np.frombuffer(received[WAV_HEADER:], dtype="<i2")
    # Three sentences of 10 ms per phoneme: well over a second of speech.
    assert len(samples) > 24000
    # Italian, English, Italian: both configured voices were heard.
    loudness = {
        round(float(np.abs(s).max()) / 32767, 2) for s in np.array_split(samples, 12)
    }
    assert {0.36, 0.30} <= loudness


async def test_tts_entity_one_shot(
    hass: HomeAssistant, kokoro_service: KokoroService, socket_enabled: None
) -> None:
    """HA's path for engines that cannot stream: one WAV after audio-stop."""
    async with tcp_server(kokoro_service.handler_factory) as port:
        entry = await add_wyoming_entry(hass, port)
        entity = hass.data[tts.DATA_COMPONENT].get_entity(
            entity_id_of(hass, entry, "tts")
        )
        assert entity is not None
        extension, data = await entity.async_get_tts_audio(
            "".join(THREE_SENTENCES), "it", {"voice": "en"}
        )
        assert await hass.config_entries.async_unload(entry.entry_id)
    assert extension == "wav"
    with wave.open(io.BytesIO(data)) as audio:
        assert (audio.getframerate(), audio.getsampwidth(), audio.getnchannels()) == (
            24000,
            2,
            1,
        )
        samples = np.frombuffer(audio.readframes(audio.getnframes()), dtype="<i2")
    assert len(samples) > 24000
    assert float(np.abs(samples).max()) / 32767 == pytest.approx(0.30, rel=0.01)
