"""Memory's evaluation fixtures against the scripted model: what is sent, kept, refused."""

import json
from typing import Any

from homeassistant.core import HomeAssistant
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.agent import Agent
from tests.harness.llama_server import Reply, text_reply
from tests.harness.memory_evaluation import (
    check,
    fill,
    fixture_names,
    load,
    profile_template,
    run_pass,
    seed,
)

pytestmark = pytest.mark.llm_apis(DOMAIN)


def scripted(hass: HomeAssistant, answer: dict[str, Any]):
    """The answer as a reply made when asked, placeholders filled from memory then."""

    async def reply() -> Reply:
        return text_reply(json.dumps(fill(answer, await profile_template(hass))))

    return reply


def test_every_behaviour_has_a_fixture() -> None:
    assert set(fixture_names()) >= {
        "birthday_in_passing",
        "correction",
        "injected_tool_result",
        "kitchen_device",
        "italian",
        "profile_over_budget",
        "silent_drop",
    }


@pytest.mark.parametrize("name", fixture_names())
async def test_fixture(hass: HomeAssistant, agent: Agent, name: str) -> None:
    fixture = load(name)
    await seed(hass, fixture)
    agent.server.script = [scripted(hass, answer) for answer in fixture["scripted"]]
    run = await run_pass(hass)
    # Every scripted answer was asked for, no more.
    assert agent.server.script == []
    assert len(agent.server.chat_requests) == len(fixture["scripted"])
    outcomes = await check(hass, fixture, run, agent.server.chat_requests)
    failed = [f"{o.expectation} ({o.detail})" for o in outcomes if not o.passed]
    assert not failed
    assert len(outcomes) > 2
