"""Each engine failing once: what the pipeline reports, and the next run works.

What Home Assistant does with each fault, read from its sources and seen here:

- whisper-server down: our whisper service answers a Wyoming `Error`, HA's
  STT entity logs it and the pipeline ends with an `error` event
  (`stt-stream-failed`); nothing is spoken.
- llama-server 500: the agent's turn does not fail, it answers with a short
  fault sentence (an `error` response); the pipeline speaks it.
- Kokoro asked for an unknown voice: the pipeline has no TTS error event in
  HA 2026.10 (`tts-end` only hands out the URL); the Wyoming `Error` surfaces
  when the satellite fetches that URL: HTTP 500, and HA logs Kokoro's reason.
"""

import logging

from homeassistant.components.assist_pipeline import PipelineEventType
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.llama_server import Reply, error_body, text_reply
from tests.harness.satellite import Run, reply_samples, set_voice, utterance_wav

from .conftest import VOICE, VoiceAssistant

pytestmark = pytest.mark.llm_apis(DOMAIN)

QUESTION = "What's the weather in Rome?"
ANSWER = "Sunny in Rome."


@pytest.fixture(autouse=True)
def question(voice: VoiceAssistant) -> None:
    """The satellite hears the same question every run."""
    voice.whisper_server.speech = f" {QUESTION}"
    voice.whisper_server.spoken_language = "en"


def speech(run: Run) -> str:
    output = run.one(PipelineEventType.INTENT_END)["intent_output"]
    return output["response"]["speech"]["plain"]["speech"]


def assert_answered(run: Run, text: str) -> None:
    """A run that went through: transcript, answer and playable audio."""
    assert "error" not in run.types
    assert run.one(PipelineEventType.STT_END)["stt_output"]["text"] == QUESTION
    assert speech(run) == text
    assert run.audio_status == 200
    layout, samples = reply_samples(run.audio)
    assert layout == (24000, 2, 1)
    assert len(samples) > 0
    assert samples.any()


def errors_of(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == logger and record.levelno >= logging.ERROR
    ]


async def test_whisper_server_down_then_back(
    voice: VoiceAssistant, caplog: pytest.LogCaptureFixture
) -> None:
    whisper = voice.whisper_server
    url = whisper.url
    await whisper.stop()
    voice.agent.server.script = [text_reply(ANSWER)]

    down = await voice.satellite.ask(utterance_wav())

    assert down.types == ["run-start", "stt-start", "error", "run-end"]
    assert down.one(PipelineEventType.ERROR) == {
        "code": "stt-stream-failed",
        "message": "speech-to-text failed",
    }
    (logged,) = errors_of(caplog, "homeassistant.components.wyoming.stt")
    assert logged.startswith(
        f"Error from Wyoming service: whisper-server at {url} is unreachable ("
    )
    assert logged.endswith(" (code: whisper-server)")
    assert down.audio_status is None
    assert voice.agent.server.chat_requests == []

    await whisper.start(int(url.rsplit(":", 1)[1]))
    assert_answered(await voice.satellite.ask(utterance_wav()), ANSWER)


async def test_llama_server_error_then_back(voice: VoiceAssistant) -> None:
    voice.agent.server.script = [
        Reply(status=500, body=error_body(500, "out of memory", "server_error")),
        text_reply(ANSWER),
    ]
    fault = "Sorry, the language model server reported an error."

    failed = await voice.satellite.ask(utterance_wav())

    assert_answered(failed, fault)
    response = failed.one(PipelineEventType.INTENT_END)["intent_output"]["response"]
    assert response["response_type"] == "error"
    assert response["data"] == {"code": "failed_to_handle"}
    assert failed.one(PipelineEventType.TTS_START)["tts_input"] == fault

    assert_answered(await voice.satellite.ask(utterance_wav()), ANSWER)


async def test_unknown_voice_then_known(
    voice: VoiceAssistant, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline_id = voice.satellite.pipeline_id
    await set_voice(voice.hass, pipeline_id, "nobody")
    voice.agent.server.script = [text_reply(ANSWER), text_reply(ANSWER)]

    refused = await voice.satellite.ask(utterance_wav())

    assert "error" not in refused.types
    assert refused.types[-3:] == ["tts-start", "tts-end", "run-end"]
    assert refused.one(PipelineEventType.TTS_START)["voice"] == "nobody"
    assert refused.audio_status == 500
    assert not refused.audio
    reason = (
        "Error from Wyoming service: unknown voice 'nobody'; available: auto, it, "
        "en, af_bella, af_heart, am_adam, bf_emma, ef_dora, ff_siwis, hf_alpha, "
        "if_sara, im_nicola, jf_alpha, pf_dora, zf_xiaobei (code: unknown-voice)"
    )
    assert errors_of(caplog, "homeassistant.components.tts") == [
        f"Error getting audio for {ANSWER}: {reason}",
        f"Error streaming tts: {reason}",
    ]

    await set_voice(voice.hass, pipeline_id, VOICE)
    assert_answered(await voice.satellite.ask(utterance_wav()), ANSWER)
