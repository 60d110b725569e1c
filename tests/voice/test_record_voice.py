"""A satellite's turn through the Assist pipeline, as the conversation record keeps it."""

import dataclasses

from homeassistant.components.assist_pipeline import PipelineEventType
from homeassistant.helpers import device_registry as dr
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.reader import CURATOR
from custom_components.desktop_assistant.record import database
from custom_components.desktop_assistant.runtime import DATA_RECORD
from tests.harness.llama_server import text_reply, tool_call_reply
from tests.harness.satellite import utterance_wav

from .conftest import VoiceAssistant

pytestmark = pytest.mark.llm_apis(DOMAIN)

QUESTION = "What's the weather in Rome?"


async def recorded(voice: VoiceAssistant) -> list[dict]:
    await voice.hass.async_block_till_done()
    record = voice.hass.data[DATA_RECORD]
    conversations, _ = await record.async_read(
        lambda db: database.list_conversations(db, reader=CURATOR, limit=10)
    )
    return [
        await record.async_read(
            lambda db, c=c: database.get_conversation(db, c["conversation_id"])
        )
        for c in conversations
    ]


async def test_a_satellite_turn_is_recorded_as_voice_with_its_device(
    voice: VoiceAssistant,
) -> None:
    hass = voice.hass
    esphome = MockConfigEntry(domain="esphome")
    esphome.add_to_hass(hass)
    devices = dr.async_get(hass)
    device = devices.async_get_or_create(
        config_entry_id=esphome.entry_id,
        identifiers={("esphome", "voice-pe-1")},
        name="Home Assistant Voice 0a1b2c",
    )
    devices.async_update_device(device.id, name_by_user="Kitchen")
    satellite = dataclasses.replace(voice.satellite, device_id=device.id)
    voice.whisper_server.speech = f" {QUESTION}"
    voice.agent.server.script = [
        tool_call_reply(("desktop_assistant__forecast", '{"place": "Rome"}')),
        text_reply("Rain in Rome tomorrow."),
    ]

    run = await satellite.ask(utterance_wav())

    assert "error" not in run.types
    intent_start = run.one(PipelineEventType.INTENT_START)
    assert intent_start["device_id"] == device.id
    (found,) = await recorded(voice)
    assert found["conversation_id"] == intent_start["conversation_id"]
    assert (found["channel"], found["device_id"], found["device_name"]) == (
        "voice",
        device.id,
        "Kitchen",
    )
    assert found["agent_id"] == voice.agent.entity_id
    user, announcement, call, answer = found["entries"]
    assert (user["kind"], user["text"], user["source"]) == ("user", QUESTION, "speech")
    assert (announcement["kind"], announcement["text"]) == (
        "assistant",
        "Looking at the forecast.",
    )
    assert (call["tool_name"], call["arguments"], call["result"]) == (
        "desktop_assistant__forecast",
        {"place": "Rome"},
        "rain in Rome",
    )
    assert (answer["text"], answer["interrupted"]) == ("Rain in Rome tomorrow.", False)


async def test_a_false_start_records_nothing(voice: VoiceAssistant) -> None:
    # The satellite woke, but nobody spoke: whisper hears nothing.
    voice.whisper_server.speech = ""
    run = await voice.satellite.ask(utterance_wav(0.5))
    assert run.one(PipelineEventType.ERROR)["code"] == "stt-no-text-recognized"
    assert voice.agent.server.chat_requests == []
    assert await recorded(voice) == []
