"""Entries of several llama-servers, an agent with fallbacks, and what answered it."""

import asyncio
from typing import Any

from homeassistant.components.conversation import trace
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_FALLBACK_SERVERS,
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from custom_components.desktop_assistant.server.health import ServerHealth
from tests.harness.agent_entry import async_add_agent


async def async_add_server(
    hass: HomeAssistant,
    url: str,
    model: str,
    *,
    fallbacks: list[MockConfigEntry] = (),  # type: ignore[assignment]
    options: dict[str, Any] | None = None,
    agent_options: dict[str, Any] | None = None,
) -> tuple[MockConfigEntry, str]:
    """Set up an entry for the server at `url` with one agent that uses `model`.

    The agent has no tools, answers in a few tokens, and falls back to
    `fallbacks` in order; `agent_options` are added to its options. Returns
    the entry and the agent's entity id.
    """
    entry, entity_id = await async_add_agent(
        hass,
        url,
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: model,
            CONF_LLM_HASS_API: [],
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: 8,
            CONF_FALLBACK_SERVERS: [e.entry_id for e in fallbacks],
        }
        | (agent_options or {}),
        title=url,
        entry_options=options,
        agent_title=model,
    )
    await hass.async_block_till_done()
    return entry, entity_id


def answered_by() -> dict[str, Any] | None:
    """The server and model the last conversation turn's trace names, if any."""
    events = trace.async_get_traces()[-1].as_dict()["events"]
    details = [
        event["data"]
        for event in events
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        and "server" in event["data"]
    ]
    return details[-1] if details else None


def connectivity(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """The state of the entry's connectivity sensor: on, off or unknown."""
    entity_id = er.async_get(hass).async_get_entity_id(
        "binary_sensor", DOMAIN, f"{entry.entry_id}_server"
    )
    assert entity_id is not None
    state = hass.states.get(entity_id)
    assert state is not None
    return state.state


async def async_wait_for_health(
    hass: HomeAssistant,
    health: ServerHealth,
    reachable: bool,
    checks: int = 120,
    pause: float = 0.25,
) -> None:
    """Check the server now, round after round, until `reachable` is reported.

    The check is asked for directly rather than by moving HA's clock, which
    would also fire the scheduled jobs (03:00, 04:00) at some times of day.
    Each round pauses `pause` real seconds: a real server may need a few rounds
    to start. A test with a frozen clock passes 0 (asyncio's sleep would never
    end).
    """
    for _ in range(checks):
        if health.reachable is reachable:
            return
        await health.async_check()
        await hass.async_block_till_done(wait_background_tasks=True)
        if pause:
            await asyncio.sleep(pause)
    raise AssertionError(f"the health check never said reachable={reachable}")
