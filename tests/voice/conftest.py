"""The voice path assembled in Home Assistant's test harness.

HA's `wyoming` integration is connected to our whisper service (in front of
the whisper-server stand-in) and to our Kokoro service (the tiny model,
behind a tap that records the Wyoming traffic); an Assist pipeline uses our
agent (the scripted llama-server stand-in) with tool files that announce
themselves; a satellite speaks into the pipeline and fetches the reply.
"""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.agent import Agent
from tests.harness.fixtures import marked_tool_files
from tests.harness.satellite import Satellite, create_pipeline
from tests.harness.tool_files import write_script
from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import (
    add_wyoming_entry,
    entity_id_of,
    tcp_server,
    whisper_wyoming,
)
from tests.harness.wyoming_tap import Passed, Tap, tapped
from wyoming_services.kokoro.__main__ import KokoroService

# The configured English voice of tests/wyoming's Kokoro config (af_heart).
VOICE = "en"

# A tool's helper script: waits for a flag file of the test, then answers.
WAIT_FOR = """\
#!/bin/sh
while [ ! -e "$1" ]; do sleep 0.01; done
echo "$2"
"""


@dataclass(frozen=True)
class Flags:
    """Flag files a tool's helper script waits for."""

    text: Path  # Kokoro received streamed text (a SynthesizeChunk)
    audio: Path  # the satellite received reply audio


def tool_file(name: str, announce: str, flag: Path, answer: str, timeout: int) -> str:
    """A tool whose answer waits for `flag`; it announces itself in English."""
    return f"""\
description = "The {name} for a place."
command = ["wait-for", "{flag}", "{answer}"]
timeout = {timeout}
announce.en = ["{announce}"]

[params.place]
type = "string"
description = "City name"
"""


@pytest.fixture
def flags(tmp_path: Path) -> Flags:
    """Where the test marks what reached Kokoro and the satellite."""
    return Flags(text=tmp_path / "kokoro-has-text", audio=tmp_path / "satellite-heard")


@pytest.fixture
def tool_files(request: pytest.FixtureRequest, flags: Flags) -> dict[str, str]:
    """`weather` answers once Kokoro has text, `forecast` once audio was heard.

    A test marked `calendar_tools` has the example calendar tools instead.
    """
    if (marked := marked_tool_files(request)) is not None:
        return marked
    return {
        "weather": tool_file(
            "weather", "Checking the weather.", flags.text, "sunny in {place}", 5
        ),
        "forecast": tool_file(
            "forecast", "Looking at the forecast.", flags.audio, "rain in {place}", 2
        ),
    }


@dataclass
class VoiceAssistant:
    """Everything a voice test touches."""

    hass: HomeAssistant
    satellite: Satellite
    agent: Agent
    whisper_server: WhisperServerStandIn
    kokoro_tap: Tap


@pytest.fixture
async def voice(
    hass: HomeAssistant,
    agent: Agent,
    whisper_server: WhisperServerStandIn,
    kokoro_service: KokoroService,
    hass_client_no_auth: Any,
    flags: Flags,
) -> AsyncIterator[VoiceAssistant]:
    """The assembled voice path, ready for a satellite to speak."""
    await hass.async_add_executor_job(
        write_script, Path(hass.config.path(DOMAIN, "tools", "wait-for")), WAIT_FOR
    )

    async def heard() -> None:
        await hass.async_add_executor_job(flags.audio.touch)

    def kokoro_got(passed: Passed) -> None:
        if passed.event.type == "synthesize-chunk":
            hass.async_add_executor_job(flags.text.touch)

    assert await async_setup_component(hass, "assist_pipeline", {})
    async with (
        whisper_wyoming(whisper_server.url) as whisper_port,
        tcp_server(kokoro_service.handler_factory) as kokoro_port,
        tapped(kokoro_port, kokoro_got) as (tap_port, tap),
    ):
        stt_entry = await add_wyoming_entry(hass, whisper_port)
        tts_entry = await add_wyoming_entry(hass, tap_port)
        pipeline_id = await create_pipeline(
            hass,
            agent.entity_id,
            entity_id_of(hass, stt_entry, "stt"),
            entity_id_of(hass, tts_entry, "tts"),
            VOICE,
        )
        # The test client freezes HA's routes: it comes after every component.
        http = await hass_client_no_auth()
        satellite = Satellite(hass, pipeline_id, http.get, on_first_audio=heard)
        yield VoiceAssistant(hass, satellite, agent, whisper_server, tap)
        for entry in (stt_entry, tts_entry):
            assert await hass.config_entries.async_unload(entry.entry_id)
