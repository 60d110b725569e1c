"""Home Assistant's quality rules as the person meets them.

Fault sentences come from the translations in the person's language; the
translation files match English; an LLM API that went away is dropped from an
agent instead of breaking it; questions are answered concurrently.
"""

import asyncio
from collections.abc import Awaitable, Callable
import json
from pathlib import Path
import re
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import intent
import pytest

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from tests.harness.agent import TEST_API, Agent, speech
from tests.harness.llama_server import MODEL_ID, Reply, text_reply

TRANSLATIONS = Path(__file__).parents[2] / "custom_components" / DOMAIN / "translations"
LANGUAGES = ["it", "de", "fr", "es", "nl"]


def flatten(node: Any, path: tuple[str, ...] = ()) -> dict[str, str]:
    if isinstance(node, dict):
        return {
            key: text
            for name, child in node.items()
            for key, text in flatten(child, (*path, name)).items()
        }
    return {".".join(path): node}


def translation(language: str) -> dict[str, str]:
    return flatten(json.loads((TRANSLATIONS / f"{language}.json").read_text()))


def placeholders(text: str) -> set[str]:
    return set(re.findall(r"{(\w+)}", text))


@pytest.mark.parametrize("language", ["en", *LANGUAGES])
def test_translations_match_english(language: str) -> None:
    english = translation("en")
    texts = translation(language)
    assert set(texts) <= set(english)
    for key, text in texts.items():
        assert placeholders(text) == placeholders(english[key]), key
    # What the agent says is never left to English.
    spoken = {key for key in english if key.startswith("exceptions.")}
    assert spoken <= set(texts)


@pytest.mark.parametrize(
    ("language", "file"),
    [
        *[(language, language) for language in LANGUAGES],
        ("de-CH", "de"),
        ("es-419", "es"),
        ("pt-BR", "en"),
    ],
)
async def test_fault_sentence_in_the_persons_language(
    agent: Agent, language: str, file: str
) -> None:
    cut = text_reply("…")
    agent.server.script = [Reply(events=cut.events[:1], cut=True), text_reply("Ok.")]
    result = await agent.ask("?", language=language)
    assert speech(result) == (translation(file)["exceptions.fault_stream_cut.message"])
    assert result.response.response_type is intent.IntentResponseType.ERROR
    result = await agent.ask("?", result.conversation_id, language=language)
    assert speech(result) == "Ok."


@pytest.mark.parametrize(
    "agent_options",
    [
        DEFAULT_AGENT_OPTIONS
        | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: ["mcp_server_gone", TEST_API]}
    ],
)
async def test_an_llm_api_that_went_away_is_dropped(agent: Agent) -> None:
    agent.server.script = [text_reply("Still here.")]
    result = await agent.ask("Hello")
    assert speech(result) == "Still here."
    (request,) = agent.server.chat_requests
    assert {tool["function"]["name"] for tool in request["tools"]} == {
        "GetDateTime",
        "weather",
    }

    # Reconfiguring the agent suggests only the APIs that exist.
    (subentry_id,) = agent.entry.subentries
    flow = await agent.hass.config_entries.subentries.async_init(
        (agent.entry.entry_id, "conversation"),
        context={"source": "reconfigure", "subentry_id": subentry_id},
    )
    assert flow["type"] is FlowResultType.FORM
    suggested = {
        str(key): key.description["suggested_value"]
        for key in flow["data_schema"].schema
        if key.description and "suggested_value" in key.description
    }
    assert suggested[CONF_LLM_HASS_API] == [TEST_API]


async def test_questions_are_answered_concurrently(agent: Agent) -> None:
    # Neither answer comes until both questions have reached the server:
    # asked one after the other, the second would never be sent.
    both_asked = asyncio.Event()

    def answer_when_both_asked(text: str) -> Callable[[], Awaitable[Reply]]:
        async def answer() -> Reply:
            if len(agent.server.chat_requests) == 2:
                both_asked.set()
            await asyncio.wait_for(both_asked.wait(), 60)
            return text_reply(text)

        return answer

    agent.server.script = [
        answer_when_both_asked("One."),
        answer_when_both_asked("Two."),
    ]
    first, second = await asyncio.gather(agent.ask("1?"), agent.ask("2?"))
    assert {speech(first), speech(second)} == {"One.", "Two."}
    assert both_asked.is_set()
