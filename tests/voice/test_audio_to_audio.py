"""Audio in, audio out: a satellite's utterance through the whole Assist pipeline.

The pipeline's own events say what happened; the tap in front of Kokoro
says what Home Assistant streamed into it; the satellite's HTTP download is
the audio a speaker would play.
"""

from typing import Any

from homeassistant.components.assist_pipeline import PipelineEventType
import numpy as np
import pytest
from wyoming.tts import SynthesizeChunk, SynthesizeStart

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.llama_server import text_reply, tool_call_reply
from tests.harness.satellite import Run, pcm_of_wav, reply_samples, utterance_wav
from tests.harness.wyoming_tap import FROM_SERVER, TO_SERVER

from .conftest import VOICE, VoiceAssistant

pytestmark = pytest.mark.llm_apis(DOMAIN)

QUESTION = "What's the weather in Rome?"
ANNOUNCEMENT = "Checking the weather."
ANSWER = ("Sunny in Rome, 18 degrees. ", "Shall I check tomorrow too?")
# tests/wyoming's tiny Kokoro speaks at the loudness of the voice's style:
# the "en" voice is af_heart, 0.30 of full scale.
EN_VOICE_PEAK = 0.30


def label(delta: dict[str, Any], announcement: str) -> str | None:
    """What an intent-progress event carries, for order checks."""
    if delta.get("tts_start_streaming"):
        return "tts streaming starts"
    content = delta.get("chat_log_delta", {})
    if content.get("role") == "tool_result":
        return "tool result"
    if content.get("content") == announcement:
        return "announcement"
    if content.get("content"):
        return "text"
    return None


def tool_result(run: Run) -> tuple[float, dict[str, Any]]:
    """When the run's only tool result reached the pipeline, and what it was."""
    (found,) = [
        (at, delta["chat_log_delta"]["result"]["data"])
        for at, delta in run.deltas
        if delta.get("chat_log_delta", {}).get("role") == "tool_result"
    ]
    return found


async def test_speech_in_speech_out(voice: VoiceAssistant) -> None:
    voice.whisper_server.speech = f" {QUESTION}"
    voice.whisper_server.spoken_language = "en"
    voice.agent.server.script = [
        tool_call_reply(("desktop_assistant__weather", '{"place": "Rome"}')),
        text_reply(*ANSWER),
    ]
    wav = utterance_wav()

    run = await voice.satellite.ask(wav)

    assert run.types[0] == "run-start"
    assert run.types[-1] == "run-end"
    assert "error" not in run.types
    # The transcript, of exactly the audio the satellite sent.
    assert run.one(PipelineEventType.STT_END)["stt_output"]["text"] == QUESTION
    (heard,) = voice.whisper_server.requests
    assert heard.samples.tobytes() == pcm_of_wav(wav)
    assert heard.parts["language"] == "en"
    intent_start = run.one(PipelineEventType.INTENT_START)
    assert intent_start["intent_input"] == QUESTION
    assert intent_start["engine"] == voice.agent.entity_id

    # The announcement goes to TTS before the tool's result exists...
    labels = [label(delta, ANNOUNCEMENT) for _, delta in run.deltas]
    assert [name for name in labels if name] == [
        "announcement",
        "tts streaming starts",
        "tool result",
        "text",
        "text",
    ]
    # ...and reaches Kokoro while the tool runs: the weather tool answers
    # only once Kokoro has streamed text, and it answered.
    result_at, result = tool_result(run)
    assert result == {"result": "sunny in Rome"}
    tap = voice.kokoro_tap
    streamed = [
        (passed.at, SynthesizeChunk.from_event(passed.event).text)
        for passed in tap.of_type("synthesize-chunk")
        if passed.direction == TO_SERVER
    ]
    assert [text for _, text in streamed] == [ANNOUNCEMENT, " ", *ANSWER]
    assert streamed[0][0] < result_at
    (start,) = tap.of_type("synthesize-start")
    assert SynthesizeStart.from_event(start.event).voice.name == VOICE

    # A reply that ends in a question keeps the satellite listening.
    intent_end = run.one(PipelineEventType.INTENT_END)
    assert intent_end["intent_output"]["continue_conversation"] is True
    assert intent_end["intent_output"]["response"]["speech"]["plain"][
        "speech"
    ] == "".join(ANSWER)

    # The reply's audio is what Kokoro made, in the format it announced.
    tts_end = run.one(PipelineEventType.TTS_END)["tts_output"]
    assert tts_end["url"] == run.one(PipelineEventType.RUN_START)["tts_output"]["url"]
    assert run.one(PipelineEventType.RUN_START)["tts_output"]["stream_response"]
    assert (run.audio_status, run.audio_type) == (200, tts_end["mime_type"])
    assert tts_end["mime_type"] in ("audio/wav", "audio/x-wav")
    layout, samples = reply_samples(run.audio)
    assert layout == (24000, 2, 1)
    from_kokoro = b"".join(
        passed.event.payload or b""
        for passed in tap.of_type("audio-chunk")
        if passed.direction == FROM_SERVER
    )
    assert samples.tobytes() == from_kokoro
    # The announcement and the answer in the "en" voice, in pieces cut by
    # the text alone (a short first piece at a natural break, then clauses):
    # the announcement, the answer's two clauses and its question.
    assert len(tap.of_type("audio-start")) == 4
    assert len(samples) > 24000 // 2
    peak = float(np.abs(samples.astype(np.int32)).max()) / 32767
    assert peak == pytest.approx(EN_VOICE_PEAK, rel=0.02)


@pytest.mark.parametrize(
    "model_text",
    [
        pytest.param("Sure, let me see.", id="the model speaks before the tool"),
        pytest.param(None, id="the announcement alone"),
    ],
)
async def test_reply_audio_starts_while_the_tool_runs(
    voice: VoiceAssistant, model_text: str | None
) -> None:
    """The forecast tool answers only after the satellite has heard audio."""
    voice.whisper_server.speech = " Will it rain in Rome tomorrow?"
    voice.whisper_server.spoken_language = "en"
    voice.agent.server.script = [
        tool_call_reply(
            ("desktop_assistant__forecast", '{"place": "Rome"}'), text=model_text
        ),
        text_reply("Yes, rain in Rome tomorrow."),
    ]

    run = await voice.satellite.ask(utterance_wav())

    result_at, result = tool_result(run)
    assert result == {"result": "rain in Rome"}
    assert run.first_audio_at is not None
    # Audio was playing before the tool answered, so before the agent finished.
    assert run.first_audio_at < result_at < run.time_of(PipelineEventType.INTENT_END)
    intent_end = run.one(PipelineEventType.INTENT_END)
    assert intent_end["intent_output"]["continue_conversation"] is False
