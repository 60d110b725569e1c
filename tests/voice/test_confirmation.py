"""A spoken confirmation: the question is heard, the satellite listens, a yes runs it.

The agent offers the example calendar tools on an empty vdir. The person
asks for an event; the agent speaks its question through Kokoro and the
pipeline keeps the conversation open; the person's spoken yes, in the same
conversation, adds the event.
"""

from pathlib import Path

from homeassistant.components.assist_pipeline import PipelineEventType
import icalendar
import numpy as np
import pytest
from wyoming.tts import Synthesize, SynthesizeChunk

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.calendar_tools import DAY, events
from tests.harness.llama_server import text_reply, tool_call_reply
from tests.harness.satellite import Run, reply_samples, utterance_wav
from tests.harness.wyoming_tap import TO_SERVER

from .conftest import VoiceAssistant

pytestmark = [pytest.mark.llm_apis(DOMAIN), pytest.mark.calendar_tools]

QUESTION = f"Add Dentist to the calendar on {DAY} 10:30?"
ANSWER = "Done, the dentist is in your calendar."
ARGUMENTS = f'{{"title": "Dentist", "start": "{DAY} 10:30"}}'


def spoken_text(voice: VoiceAssistant) -> str:
    """All the text Home Assistant gave Kokoro, whole or streamed."""
    texts = []
    for passed in voice.kokoro_tap.passed:
        if passed.direction != TO_SERVER:
            continue
        if passed.event.type == "synthesize-chunk":
            texts.append(SynthesizeChunk.from_event(passed.event).text)
        elif passed.event.type == "synthesize":
            texts.append(Synthesize.from_event(passed.event).text)
    return "".join(texts)


def reply_of(run: Run) -> tuple[str, bool]:
    """The agent's reply and whether the satellite keeps listening."""
    output = run.one(PipelineEventType.INTENT_END)["intent_output"]
    return output["response"]["speech"]["plain"]["speech"], output[
        "continue_conversation"
    ]


async def test_spoken_question_and_spoken_yes(
    voice: VoiceAssistant, vdir: Path
) -> None:
    voice.whisper_server.speech = " Put the dentist in my calendar."
    voice.whisper_server.spoken_language = "en"
    voice.agent.server.script = [
        tool_call_reply(("desktop_assistant__calendar_add", ARGUMENTS))
    ]

    asked = await voice.satellite.ask(utterance_wav())

    assert "error" not in asked.types
    assert reply_of(asked) == (QUESTION, True)
    # The question is what Kokoro spoke, and the satellite got its audio.
    assert QUESTION in spoken_text(voice)
    layout, samples = reply_samples(asked.audio)
    assert layout == (24000, 2, 1)
    assert len(samples) > 24000 // 4
    assert np.abs(samples.astype(np.int32)).max() > 0
    assert events(vdir) == []

    voice.kokoro_tap.clear()
    voice.whisper_server.speech = " Yes."
    voice.agent.server.script = [text_reply(ANSWER)]
    conversation_id = asked.one(PipelineEventType.INTENT_END)["intent_output"][
        "conversation_id"
    ]

    done = await voice.satellite.ask(utterance_wav(), conversation_id)

    assert done.one(PipelineEventType.STT_END)["stt_output"]["text"] == "Yes."
    assert reply_of(done) == (ANSWER, False)
    (path,) = events(vdir)
    (event,) = icalendar.Calendar.from_ical(path.read_bytes()).walk("VEVENT")
    assert str(event["SUMMARY"]) == "Dentist"
    assert event.decoded("DTSTART").strftime("%Y-%m-%d %H:%M") == f"{DAY} 10:30"
    results = [
        delta["chat_log_delta"]["result"]["data"]
        for _, delta in done.deltas
        if delta.get("chat_log_delta", {}).get("role") == "tool_result"
    ]
    assert results == [
        {"result": f"added to personal: {DAY} 10:30 Dentist (until 11:30)"}
    ]
    assert ANSWER in spoken_text(voice)
    assert len(reply_samples(done.audio)[1]) > 24000 // 4


async def test_spoken_no(voice: VoiceAssistant, vdir: Path) -> None:
    voice.whisper_server.speech = " Put the dentist in my calendar."
    voice.whisper_server.spoken_language = "en"
    voice.agent.server.script = [
        tool_call_reply(("desktop_assistant__calendar_add", ARGUMENTS))
    ]
    asked = await voice.satellite.ask(utterance_wav())
    conversation_id = asked.one(PipelineEventType.INTENT_END)["intent_output"][
        "conversation_id"
    ]

    voice.kokoro_tap.clear()
    voice.whisper_server.speech = " No, thanks."
    cancelled = await voice.satellite.ask(utterance_wav(), conversation_id)

    assert reply_of(cancelled) == ("OK, I won't.", False)
    assert "OK, I won't." in spoken_text(voice)
    assert events(vdir) == []
