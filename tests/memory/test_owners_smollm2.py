"""Per-person memory through the agent on the real SmolLM2, read off the wire.

A tap in front of llama-server keeps each request's body: what the model
was sent is asserted on, whatever it answers.
"""

from collections.abc import AsyncIterator
import json

from homeassistant import config_entries
from homeassistant.auth.models import User
from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.memory.llm_tools import RememberTool
from custom_components.desktop_assistant.memory.page_reads import profile_page
from custom_components.desktop_assistant.runtime import DATA_MEMORY
from tests.harness.llama_tap import LlamaTap, tapped
from tests.harness.members import member
from tests.harness.real_engines import REAL_MODEL_TIMEOUT, RealLlamaServer

pytestmark = REAL_MODEL_TIMEOUT


@pytest.fixture
async def tap(
    socket_enabled: None, smollm2_server: RealLlamaServer
) -> AsyncIterator[LlamaTap]:
    async with tapped(smollm2_server.url) as tap:
        yield tap


@pytest.fixture
def smollm2_url(tap: LlamaTap) -> str:
    return tap.url


@pytest.fixture
def smollm2_apis() -> list[str]:
    """The integration's tools API: memory's tools and its prompt context."""
    return [DOMAIN]


async def remember_as(hass: HomeAssistant, user: User, fact: str) -> str:
    """`remember` on `profile`, called in a turn of `user` as the model calls it."""
    result = await RememberTool().async_call(
        hass,
        llm.ToolInput(RememberTool.name, {"page": "profile", "fact": fact}),
        llm.LLMContext(
            platform=DOMAIN,
            context=Context(user_id=user.id),
            language="en",
            assistant="conversation",
            device_id=None,
        ),
    )
    return result.data["result"]


async def test_a_members_profile_reaches_their_prompt_only(
    hass: HomeAssistant,
    hass_admin_user: User,
    smollm2_agent: tuple[config_entries.ConfigEntry, str],
    tap: LlamaTap,
) -> None:
    anna, bruno = await member(hass, "Anna"), await member(hass, "Bruno")
    assert "Allergic to nuts" in await remember_as(hass, anna, "Allergic to nuts")
    memory = hass.data[DATA_MEMORY]
    own = await memory.async_read(lambda db: profile_page(db, anna.id))
    assert "Allergic to nuts" in own.text

    _, entity_id = smollm2_agent
    for user, carries in ((anna, True), (bruno, False), (None, False)):
        result = await conversation.async_converse(
            hass,
            "What am I allergic to?",
            None,
            Context(user_id=user.id if user else None),
            "en",
            entity_id,
        )
        assert result.response.speech["plain"]["speech"]
        sent = json.dumps(tap.chat_requests[-1])
        assert ("Allergic to nuts" in sent) is carries, (user, sent[:2000])
