"""The nightly pass over a mixed night: each conversation's facts go to its owner's pages.

Anna typed a conversation of her own; a satellite heard the household. What
Anna said lands on her pages only, never on a household page, nor in the
household's consolidation.
"""

import json
from typing import Any

from homeassistant.auth.models import User
from homeassistant.core import HomeAssistant
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.memory.page_reads import list_pages, page_named
from custom_components.desktop_assistant.reader import CURATOR
from custom_components.desktop_assistant.runtime import DATA_MEMORY
from tests.harness.agent import Agent
from tests.harness.llama_server import Reply, text_reply
from tests.harness.members import member
from tests.harness.memory_seed import Said, add_conversation

from .test_nightly import AT, NO_PLAN, run

pytestmark = pytest.mark.llm_apis(DOMAIN)


def notes_for(request: dict[str, Any]) -> Reply:
    """What the model answers each request: notes of what the transcript says."""
    said = request["messages"][-1]["content"]
    if request["response_format"]["json_schema"]["name"] == "plan":
        return text_reply(json.dumps(NO_PLAN))
    notes = []
    if "allergic" in said:
        notes += [
            {"page": "Health", "type": "other", "fact": "Allergic to nuts"},
            {"page": "profile", "type": "other", "fact": "Allergic to nuts"},
        ]
    if "wifi" in said:
        notes.append(
            {"page": "Wifi", "type": "thing", "fact": "Password on the fridge"}
        )
    return text_reply(json.dumps({"notes": notes}))


async def test_a_members_facts_reach_only_their_pages(
    hass: HomeAssistant, agent: Agent, hass_admin_user: User
) -> None:
    anna = await member(hass, "Anna")
    await add_conversation(
        hass,
        "anna-typed",
        [Said("user", "Remember that I am allergic to nuts, it matters a lot")],
        AT,
        user_id=anna.id,
    )
    await add_conversation(
        hass,
        "kitchen-voice",
        [Said("user", "The wifi password is on the fridge, for the guests")],
        AT + 60,
        device_name="Kitchen",
    )
    agent.server.reply_to = notes_for
    result = await run(hass)
    assert result["outcome"] == "ok"
    assert result["summary"]["notes"] == 3

    memory = hass.data[DATA_MEMORY]
    health = await memory.async_read(lambda db: page_named(db, "Health", anna.id))
    assert health is not None and "Allergic to nuts" in health.text
    wifi = await memory.async_read(lambda db: page_named(db, "Wifi", None))
    assert wifi is not None and wifi.user_id is None
    assert await memory.async_read(lambda db: page_named(db, "Wifi", anna.id)) is None
    live, _ = await memory.async_read(lambda db: list_pages(db, CURATOR))
    household_text = " ".join(page.text for page in live if page.user_id is None)
    assert "nuts" not in household_text
    assert "nuts" in " ".join(page.text for page in live if page.user_id == anna.id)
    (plan,) = [
        request
        for request in agent.server.chat_requests
        if request["response_format"]["json_schema"]["name"] == "plan"
    ]
    assert "nuts" not in json.dumps(plan)
    assert "fridge" in json.dumps(plan)
    assert "nuts" not in memory.context_for(None)
    assert "nuts" in memory.context_for(anna.id)
