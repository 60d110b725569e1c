"""A voice satellite inside Home Assistant: WAV in, the reply's audio out.

It does what ESPHome's `voice_assistant` asks of Home Assistant: streams a
recorded utterance into an Assist pipeline (speech-to-text to
text-to-speech) with `async_pipeline_from_audio_stream`, and fetches the
reply from the pipeline's TTS URL over HTTP as soon as the pipeline says
the reply is streamed (`tts_start_streaming`), else at `tts-end`. Every
pipeline event and the reply's first audio byte are timed on one clock.

By default the recording is the whole command, sent at once, and speech
ends with it. Given the segmenter's silence, the satellite streams as a
microphone does, in real time, the speech and then silence until Home
Assistant's own voice command segmenter ends the command; speech then ends
at the last voiced sample, found in the audio itself.
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
import contextlib
from dataclasses import dataclass, field
import io
import time
from typing import Any
import wave

from aiohttp import ClientResponse
from homeassistant.components import assist_pipeline, stt
from homeassistant.components.assist_pipeline import (
    AudioSettings,
    PipelineEvent,
    PipelineEventType,
)
from homeassistant.core import Context, HomeAssistant
import numpy as np

from tests.harness.real_engines import speak

# The header HA's Wyoming TTS sends before the first samples of a reply.
WAV_HEADER = 44
# What a satellite streams: 16 kHz mono 16-bit PCM, in 1024-sample pieces.
RATE = 16000
CHUNK_BYTES = 1024 * 2
# Louder than this is voiced: -40 dBFS, far above digital silence and
# below any syllable espeak-ng or a person speaks.
VOICED_LEVEL = round(32768 * 10 ** (-40 / 20))
# Silence streamed after the speech at most, should the segmenter not end.
MAX_SILENCE_SECONDS = 5.0

type Fetch = Callable[[str], contextlib.AbstractAsyncContextManager[ClientResponse]]

STT_METADATA = stt.SpeechMetadata(
    language="",  # the pipeline sets its own
    format=stt.AudioFormats.WAV,
    codec=stt.AudioCodecs.PCM,
    bit_rate=stt.AudioBitRates.BITRATE_16,
    sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
    channel=stt.AudioChannels.CHANNEL_MONO,
)


def utterance_wav(seconds: float = 1.5, hz: float = 220.0) -> bytes:
    """A recorded utterance as a satellite's microphone gives it: a 16 kHz WAV."""
    samples = 0.3 * np.sin(2 * np.pi * hz * np.arange(int(RATE * seconds)) / RATE)
    with io.BytesIO() as buffer:
        with wave.open(buffer, "wb") as wav:
            wav.setframerate(RATE)
            wav.setsampwidth(2)
            wav.setnchannels(1)
            wav.writeframes(np.round(samples * 32767).astype("<i2").tobytes())
        return buffer.getvalue()


def pcm_of_wav(data: bytes) -> bytes:
    """The frames of a 16 kHz mono 16-bit WAV."""
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (
            RATE,
            2,
            1,
        )
        return wav.readframes(wav.getnframes())


@dataclass
class Run:
    """One pipeline run as the satellite lived it; times are perf_counter()."""

    events: list[PipelineEvent] = field(default_factory=list)
    event_times: list[float] = field(default_factory=list)
    speech_ended_at: float = 0.0  # the last voiced sample, or the recording's end
    audio_ended_at: float = 0.0  # the last audio the pipeline took
    streamed_seconds: float = 0.0  # of audio, silence included
    audio: bytearray = field(default_factory=bytearray)
    audio_status: int | None = None
    audio_type: str | None = None
    first_audio_at: float | None = None

    def of_type(self, event_type: PipelineEventType) -> list[dict[str, Any]]:
        """The data of every event of this type."""
        return [event.data or {} for event in self.events if event.type is event_type]

    def one(self, event_type: PipelineEventType) -> dict[str, Any]:
        """The data of the only event of this type."""
        (data,) = self.of_type(event_type)
        return data

    def time_of(self, event_type: PipelineEventType) -> float:
        """When the first event of this type arrived."""
        return next(
            at
            for event, at in zip(self.events, self.event_times, strict=True)
            if event.type is event_type
        )

    @property
    def types(self) -> list[str]:
        """Event types in order."""
        return [str(event.type) for event in self.events]

    @property
    def deltas(self) -> list[tuple[float, dict[str, Any]]]:
        """The agent's chat log deltas and the streaming start, with their times."""
        return [
            (at, event.data or {})
            for event, at in zip(self.events, self.event_times, strict=True)
            if event.type is PipelineEventType.INTENT_PROGRESS
        ]


@dataclass
class Satellite:
    """Runs the pipeline `pipeline_id` and fetches replies through `fetch`."""

    hass: HomeAssistant
    pipeline_id: str
    fetch: Fetch
    # Called once per run when the first reply audio (past the header) arrives.
    on_first_audio: Callable[[], Awaitable[None]] | None = None
    # The satellite's device in HA's device registry, as ESPHome passes it.
    device_id: str | None = None

    async def ask(
        self,
        wav: bytes,
        conversation_id: str | None = None,
        *,
        segmenter_silence: float | None = None,
    ) -> Run:
        """Say the utterance in `wav`; return the run once its reply is fetched.

        With `segmenter_silence` (seconds), stream it in real time followed
        by silence, and let Home Assistant's segmenter end the command.
        """
        run = Run()
        pcm = pcm_of_wav(wav)
        reply_url: str | None = None
        download: asyncio.Task[None] | None = None

        def on_event(event: PipelineEvent) -> None:
            nonlocal reply_url, download
            run.events.append(event)
            run.event_times.append(time.perf_counter())
            data = event.data or {}
            if event.type is PipelineEventType.RUN_START and "tts_output" in data:
                reply_url = data["tts_output"]["url"]
            starts_reply = event.type is PipelineEventType.TTS_END or (
                event.type is PipelineEventType.INTENT_PROGRESS
                and data.get("tts_start_streaming")
            )
            if starts_reply and download is None and reply_url is not None:
                download = self.hass.async_create_task(self._download(reply_url, run))

        await assist_pipeline.async_pipeline_from_audio_stream(
            self.hass,
            context=Context(),
            event_callback=on_event,
            stt_metadata=STT_METADATA,
            stt_stream=(
                self._microphone(pcm, run)
                if segmenter_silence is None
                else _live_microphone(pcm, run)
            ),
            pipeline_id=self.pipeline_id,
            conversation_id=conversation_id,
            device_id=self.device_id,
            # The satellite plays WAV as the TTS engine makes it: no conversion.
            tts_audio_output={"preferred_format": "wav"},
            # Without a segmenter, speech ends with the recording.
            audio_settings=(
                AudioSettings(is_vad_enabled=False)
                if segmenter_silence is None
                else AudioSettings(silence_seconds=segmenter_silence)
            ),
        )
        if download is not None:
            await download
        return run

    async def _microphone(self, pcm: bytes, run: Run) -> AsyncIterator[bytes]:
        for offset in range(0, len(pcm), CHUNK_BYTES):
            yield pcm[offset : offset + CHUNK_BYTES]
        run.speech_ended_at = run.audio_ended_at = time.perf_counter()

    async def _download(self, url: str, run: Run) -> None:
        async with self.fetch(url) as response:
            run.audio_status = response.status
            run.audio_type = response.content_type
            async for data in response.content.iter_any():
                run.audio += data
                if run.first_audio_at is None and len(run.audio) > WAV_HEADER:
                    run.first_audio_at = time.perf_counter()
                    if self.on_first_audio is not None:
                        await self.on_first_audio()


async def _live_microphone(pcm: bytes, run: Run) -> AsyncIterator[bytes]:
    """The speech, then silence, each chunk once a microphone would have it."""
    audio = pcm + bytes(2 * round(RATE * MAX_SILENCE_SECONDS))
    started = time.perf_counter()
    run.speech_ended_at = started + (last_voiced_sample(pcm) + 1) / RATE
    for offset in range(0, len(audio), CHUNK_BYTES):
        chunk = audio[offset : offset + CHUNK_BYTES]
        captured = started + (offset + len(chunk)) / 2 / RATE
        await asyncio.sleep(max(0.0, captured - time.perf_counter()))
        run.audio_ended_at = time.perf_counter()
        run.streamed_seconds = (offset + len(chunk)) / 2 / RATE
        yield chunk


def last_voiced_sample(pcm: bytes) -> int:
    """The index of the last 16-bit sample louder than -40 dBFS; -1 if none is."""
    levels = np.abs(np.frombuffer(pcm, dtype="<i2").astype(np.int32))
    voiced = np.flatnonzero(levels > VOICED_LEVEL)
    return int(voiced[-1]) if len(voiced) else -1


def reply_samples(audio: bytes | bytearray) -> tuple[tuple[int, int, int], np.ndarray]:
    """(rate, width, channels) of a streamed WAV reply, and its int16 samples."""
    with wave.open(io.BytesIO(bytes(audio[:WAV_HEADER]))) as header:
        layout = (header.getframerate(), header.getsampwidth(), header.getnchannels())
    return layout, np.frombuffer(bytes(audio[WAV_HEADER:]), dtype="<i2")


async def create_pipeline(
    hass: HomeAssistant, agent_id: str, stt_id: str, tts_id: str, voice: str
) -> str:
    """An assistant as made in Settings > Voice assistants; return its id."""
    pipeline = await assist_pipeline.async_create_default_pipeline(
        hass, stt_id, tts_id, pipeline_name="Desktop Assistant"
    )
    assert pipeline is not None
    # What the UI stores when an LLM agent (languages "*") is chosen.
    await assist_pipeline.async_update_pipeline(
        hass,
        pipeline,
        conversation_engine=agent_id,
        conversation_language="*",
        tts_voice=voice,
        prefer_local_intents=False,
    )
    return pipeline.id


async def set_voice(hass: HomeAssistant, pipeline_id: str, voice: str) -> None:
    """Choose another voice for the assistant, as its settings page does."""
    (pipeline,) = [
        p for p in assist_pipeline.async_get_pipelines(hass) if p.id == pipeline_id
    ]
    await assist_pipeline.async_update_pipeline(hass, pipeline, tts_voice=voice)


def spoken_wav(text: str) -> bytes:
    """`text` spoken by espeak-ng as a satellite sends it: 16 kHz mono 16-bit WAV."""
    # Slower than espeak-ng's default: Whisper base hears it word for word.
    pcm, rate = speak(text, words_per_minute=140)
    samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32)
    at = np.arange(0, len(samples) - 1, rate / RATE)
    resampled = np.interp(at, np.arange(len(samples)), samples).astype(np.int16)
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(resampled.tobytes())
    return out.getvalue()
