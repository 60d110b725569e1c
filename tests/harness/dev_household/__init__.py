"""Wires scripts/develop's household into Home Assistant at every start.

The engines run beside Home Assistant (tests/harness/household.py starts
them); this adds what a person would add by hand, once: the llama-server
entry of desktop_assistant, the Wyoming entries of the whisper relay and of
Kokoro, and an Assist pipeline of the three, made the preferred one. What is
there already is left as it is, so a person's own changes stay.
"""

import logging
from typing import Any

from homeassistant.components import assist_pipeline
from homeassistant.components.assist_pipeline.pipeline import KEY_ASSIST_PIPELINE
from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import (
    CONF_HOST,
    CONF_PORT,
    CONF_URL,
    EVENT_HOMEASSISTANT_STARTED,
)
from homeassistant.core import Event, HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.typing import ConfigType

from custom_components.desktop_assistant.const import CONF_TEMPERATURE
from custom_components.desktop_assistant.server.credentials import without_credentials

DOMAIN = "dev_household"
PIPELINE_NAME = "Development household"
_LOGGER = logging.getLogger(__name__)


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Add the household's entries and pipeline once Home Assistant runs."""
    household: dict[str, Any] = config[DOMAIN]

    async def wire(_: Event) -> None:
        await _async_add_llama_server(hass, household["llama_server"])
        for key in ("stt", "tts"):
            if service := household.get(key):
                await _async_add_wyoming(hass, service["host"], int(service["port"]))
        await hass.async_block_till_done()
        await _async_add_pipeline(hass, voice="stt" in household)

    hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STARTED, wire)
    return True


async def _async_add_llama_server(hass: HomeAssistant, url: str) -> None:
    result = await hass.config_entries.flow.async_init(
        "desktop_assistant", context={"source": SOURCE_USER}, data={CONF_URL: url}
    )
    if result.get("step_id") == "tool_calls":
        # A template that cannot call tools (SmolLM2's): the agent calls them
        # as the flow suggests, constrained while the template cannot.
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {"tool_calls": "auto"}
        )
    if result.get("errors"):
        _LOGGER.error(
            "llama-server at %s was not added: %s",
            without_credentials(url),
            result["errors"],
        )
        return
    # A 135M model wanders at the default temperature (it answered "France"
    # to "What is the capital of France?" one time in three): it gets 0.
    entry = hass.config_entries.async_get_entry(result["result"].entry_id)
    for subentry in list(entry.subentries.values()):
        if subentry.subentry_type == "conversation":
            hass.config_entries.async_update_subentry(
                entry, subentry, data={**subentry.data, CONF_TEMPERATURE: 0.0}
            )


async def _async_add_wyoming(hass: HomeAssistant, host: str, port: int) -> None:
    for entry in hass.config_entries.async_entries("wyoming"):
        if (entry.data.get(CONF_HOST), entry.data.get(CONF_PORT)) == (host, port):
            return
    result = await hass.config_entries.flow.async_init(
        "wyoming",
        context={"source": SOURCE_USER},
        data={CONF_HOST: host, CONF_PORT: port},
    )
    if result.get("errors"):
        _LOGGER.error(
            "Wyoming at %s:%s was not added: %s", host, port, result["errors"]
        )


def _entity_of(hass: HomeAssistant, domain: str, platform: str) -> str | None:
    entities = er.async_get(hass).entities.values()
    return next(
        (
            e.entity_id
            for e in entities
            if e.domain == domain and e.platform == platform
        ),
        None,
    )


async def _async_add_pipeline(hass: HomeAssistant, voice: bool) -> None:
    if any(p.name == PIPELINE_NAME for p in assist_pipeline.async_get_pipelines(hass)):
        return
    agent = _entity_of(hass, "conversation", "desktop_assistant")
    stt = _entity_of(hass, "stt", "wyoming")
    tts = _entity_of(hass, "tts", "wyoming")
    if not agent or (voice and not (stt and tts)):
        _LOGGER.error("No pipeline: agent %s, stt %s, tts %s", agent, stt, tts)
        return
    store = hass.data[KEY_ASSIST_PIPELINE].pipeline_store
    if voice:
        pipeline = await assist_pipeline.async_create_default_pipeline(
            hass, stt_engine_id=stt, tts_engine_id=tts, pipeline_name=PIPELINE_NAME
        )
        if pipeline is None:
            _LOGGER.error("The pipeline could not be made of %s and %s", stt, tts)
            return
        await assist_pipeline.async_update_pipeline(
            hass, pipeline, conversation_engine=agent, conversation_language="*"
        )
    else:
        # scripts/develop --no-voice: typed questions only, to our agent.
        pipeline = await store.async_create_item(_typed_pipeline(hass, agent))
    # What a person does with the star in Settings → Voice assistants.
    store.async_set_preferred_item(pipeline.id)
    _LOGGER.info("The Assist pipeline %r is the preferred one", PIPELINE_NAME)


def _typed_pipeline(hass: HomeAssistant, agent: str) -> dict[str, Any]:
    """A pipeline's settings with no speech: typed questions to `agent`."""
    return {
        "conversation_engine": agent,
        "conversation_language": "*",
        "language": hass.config.language,
        "name": PIPELINE_NAME,
        "stt_engine": None,
        "stt_language": None,
        "tts_engine": None,
        "tts_language": None,
        "tts_voice": None,
        "wake_word_entity": None,
        "wake_word_id": None,
    }
