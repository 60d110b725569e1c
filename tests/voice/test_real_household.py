"""Audio in, audio out, every engine real: the household of scripts/develop.

A satellite streams espeak-ng's spoken question into Home Assistant's Assist
pipeline; the real whisper-server (Whisper base) behind our relay hears it,
our agent asks the real llama-server on SmolLM2-135M-Instruct, and our
Kokoro service speaks the answer with the real int8 model. Without the
engines these tests skip and the test run says so at its end.
"""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from homeassistant.components.assist_pipeline import PipelineEventType
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import numpy as np
import pytest

from custom_components.desktop_assistant.text import words
from tests.harness.real_engines import (
    RealWhisperServer,
    write_real_kokoro_config,
)
from tests.harness.satellite import (
    Satellite,
    create_pipeline,
    reply_samples,
    spoken_wav,
)
from tests.harness.wyoming import (
    add_wyoming_entry,
    entity_id_of,
    tcp_server,
    whisper_wyoming,
)
from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import build_service

QUESTION = "What is the capital of France?"
# Far above what these engines take for one short question on 2 busy cores.
WHISPER_TIMEOUT = 60.0


@pytest.fixture
async def satellite(
    hass: HomeAssistant,
    tmp_path: Path,
    real_whisper: RealWhisperServer,
    smollm2_agent: tuple[Any, str],
    hass_client_no_auth: Any,
) -> AsyncIterator[Satellite]:
    """A satellite of a pipeline of the real engines and our agent."""
    kokoro = build_service(load_config(write_real_kokoro_config(tmp_path)))
    assert await async_setup_component(hass, "assist_pipeline", {})
    try:
        async with (
            whisper_wyoming(real_whisper.url, whisper_timeout=WHISPER_TIMEOUT) as stt,
            tcp_server(kokoro.handler_factory) as tts,
        ):
            stt_entry = await add_wyoming_entry(hass, stt)
            tts_entry = await add_wyoming_entry(hass, tts)
            pipeline_id = await create_pipeline(
                hass,
                smollm2_agent[1],
                entity_id_of(hass, stt_entry, "stt"),
                entity_id_of(hass, tts_entry, "tts"),
                "en",
            )
            http = await hass_client_no_auth()
            yield Satellite(hass, pipeline_id, http.get)
            for entry in (stt_entry, tts_entry):
                assert await hass.config_entries.async_unload(entry.entry_id)
    finally:
        kokoro.close()


async def test_a_spoken_question_gets_a_spoken_answer(satellite: Satellite) -> None:
    run = await satellite.ask(spoken_wav(QUESTION))

    assert "error" not in run.types, run.of_type(PipelineEventType.ERROR)
    assert run.types[-1] == "run-end"
    heard = run.one(PipelineEventType.STT_END)["stt_output"]["text"]
    # The words that carry the question; base may mishear a small word.
    assert {"capital", "france"} <= set(words(heard)), heard
    answer = run.one(PipelineEventType.INTENT_END)["intent_output"]["response"]
    assert "paris" in words(answer["speech"]["plain"]["speech"])
    # The answer streamed out of the model, into the pipeline, as it was written.
    assert (
        len([d for _, d in run.deltas if d.get("chat_log_delta", {}).get("content")])
        > 1
    )
    # Kokoro's speech came back to the satellite: real audio, not silence.
    assert run.audio_status == 200
    layout, samples = reply_samples(run.audio)
    assert layout == (24000, 2, 1)
    assert len(samples) > 24000  # more than a second of speech
    assert np.abs(samples.astype(np.int32)).max() > 1000
