"""The end of speech, as a household's satellite lives it.

The satellite streams speech and then silence in real time; Home
Assistant's own voice command segmenter ends the command. The voice
benchmark times from the last voiced sample of the audio, found in the
audio itself.
"""

import logging
from pathlib import Path
import wave

from homeassistant.components.assist_pipeline import PipelineEventType
import numpy as np
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.llama_server import text_reply
from tests.harness.satellite import (
    MAX_SILENCE_SECONDS,
    RATE,
    last_voiced_sample,
    pcm_of_wav,
    spoken_wav,
)

from .conftest import VoiceAssistant

pytestmark = pytest.mark.llm_apis(DOMAIN)

QUESTION = "What is the capital of France?"
SPEECH_SECONDS = 1.2
ROOM_NOISE = 10  # about -70 dBFS: a quiet room between words


def speech_then_silence(folder: Path) -> Path:
    """A WAV file of known silence: 1.2 s at a voice's level, then 0.8 s of room."""
    time = np.arange(round(SPEECH_SECONDS * RATE)) / RATE
    speech = 0.3 * 32767 * np.sin(2 * np.pi * 220 * time) * (1 + 0.5 * np.sin(9 * time))
    noise = np.random.default_rng(3).normal(0, ROOM_NOISE, round(0.8 * RATE))
    samples = np.concatenate([speech, noise]).round().astype("<i2")
    path = folder / "speech-then-silence.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(samples.tobytes())
    return path


def test_the_end_of_speech_is_the_last_voiced_sample(tmp_path: Path) -> None:
    pcm = pcm_of_wav(speech_then_silence(tmp_path).read_bytes())
    end = last_voiced_sample(pcm)
    # Within a millisecond of where the speech ends: a sine near its zero
    # crossing is quieter than the threshold for a sample or two.
    assert abs(end - (SPEECH_SECONDS * RATE - 1)) <= RATE // 1000
    assert last_voiced_sample(pcm[2 * end + 2 :]) == -1  # room noise is no speech


async def test_the_segmenter_ends_the_command_and_the_pause_answers(
    voice: VoiceAssistant, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    voice.whisper_server.speech = f" {QUESTION}"
    voice.whisper_server.spoken_language = "en"
    voice.agent.server.script = [text_reply("Paris.")]

    run = await voice.satellite.ask(spoken_wav(QUESTION), segmenter_silence=0.7)

    assert "error" not in run.types, run.events
    assert run.one(PipelineEventType.STT_END)["stt_output"]["text"] == QUESTION
    assert run.speech_ended_at < run.time_of(PipelineEventType.STT_VAD_END)
    # The segmenter ended the command after its silence, long before the
    # satellite would have run out of it.
    speech = (last_voiced_sample(pcm_of_wav(spoken_wav(QUESTION))) + 1) / RATE
    assert 0.7 <= run.streamed_seconds - speech < MAX_SILENCE_SECONDS
    # One request, made at the pause, with the whole of the speech.
    (request,) = voice.whisper_server.requests
    assert len(request.samples) > last_voiced_sample(pcm_of_wav(spoken_wav(QUESTION)))
    (line,) = [r.getMessage() for r in caplog.records if "transcribed" in r.message]
    assert line.endswith(
        "answered with the transcript asked at a pause (1 asked at pauses)"
    )
