"""The agent with tool files from the config folder: their API and announcements."""

from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.helpers import llm
import pytest

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from tests.harness.agent import Agent, run_text_pipeline, speech
from tests.harness.llama_server import MODEL_ID, text_reply, tool_call_reply

WEATHER = """\
description = "Current weather for a place."
command = ["echo", "sunny in {place}"]
announce.en = ["Checking the weather."]
announce.it = ["Controllo il meteo."]

[params.place]
type = "string"
description = "City name"
"""
NOW = """\
description = "The current time."
command = ["echo", "14:05"]
"""
TOOL_FILES = {"weather": WEATHER, "now": NOW}


def options(*apis: str) -> dict[str, Any]:
    return DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: list(apis)}


@pytest.fixture
def tool_files() -> dict[str, str]:
    return TOOL_FILES


@pytest.mark.parametrize("agent_options", [options(DOMAIN)])
async def test_tool_files_are_an_api_of_their_own(agent: Agent) -> None:
    assert DOMAIN in {api.id for api in llm.async_get_apis(agent.hass)}
    agent.server.script = [
        tool_call_reply(("desktop_assistant__now", "{}")),
        text_reply("It is 14:05."),
    ]
    result = await agent.ask("What time is it?")

    assert speech(result) == "It is 14:05."
    first, second = agent.server.chat_requests
    # The tool files, the record's and memory's tools.
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        "desktop_assistant__now",
        "desktop_assistant__recall",
        "desktop_assistant__recall_conversations",
        "desktop_assistant__remember",
        "desktop_assistant__weather",
    ]
    assert second["messages"][-1]["content"] == "14:05"


@pytest.mark.parametrize(
    ("agent_options", "language", "offered", "phrase"),
    [
        (options(DOMAIN), "en", "desktop_assistant__weather", "Checking the weather."),
        (options(DOMAIN), "it", "desktop_assistant__weather", "Controllo il meteo."),
        # With several APIs chosen, HA prefixes each tool with its API's name.
        (
            options("assist", DOMAIN),
            "en",
            "assist__desktop_assistant__weather",
            "Checking the weather.",
        ),
    ],
)
async def test_announcement_before_the_tool_runs(
    agent: Agent, language: str, offered: str, phrase: str
) -> None:
    agent.server.script = [
        tool_call_reply((offered, '{"place": "Rome"}')),
        text_reply("Sunny in Rome."),
    ]
    result = await agent.ask("Weather in Rome?", language=language)

    assert speech(result) == "Sunny in Rome."
    content = agent.chat_log(result.conversation_id)
    call, tool_result, answer = content[-3:]
    # The phrase is the text of the message that carries the tool call, so it
    # is streamed (and spoken) before the call's result exists.
    assert isinstance(call, conversation.AssistantContent)
    assert call.content == phrase
    assert call.tool_calls[0].tool_name == offered
    assert tool_result.result.data == {"result": "sunny in Rome"}
    assert answer.content == "Sunny in Rome."


@pytest.mark.parametrize("agent_options", [options(DOMAIN)])
async def test_at_most_one_announcement_per_question(agent: Agent) -> None:
    agent.server.script = [
        tool_call_reply(("desktop_assistant__weather", '{"place": "Rome"}')),
        tool_call_reply(("desktop_assistant__weather", '{"place": "Milan"}')),
        text_reply("Sunny in both."),
    ]
    result = await agent.ask("Weather in Rome and Milan?")

    texts = [
        item.content
        for item in agent.chat_log(result.conversation_id)
        if isinstance(item, conversation.AssistantContent) and item.content
    ]
    assert texts == ["Checking the weather.", "Sunny in both."]


@pytest.mark.parametrize("agent_options", [options(DOMAIN)])
async def test_silent_tool_and_generic_announcement(agent: Agent) -> None:
    agent.server.script = [
        tool_call_reply(("desktop_assistant__now", "{}")),
        text_reply("14:05."),
        tool_call_reply(("desktop_assistant__weather", '{"place": "Paris"}')),
        text_reply("Ensoleillé."),
        tool_call_reply(("desktop_assistant__weather", '{"place": "Berlin"}')),
        text_reply("Sonnig."),
    ]
    silent = await agent.ask("Time?")
    french = await agent.ask("Météo à Paris ?", language="fr")
    german = await agent.ask("Wetter in Berlin?", language="de-CH")

    # A tool file without phrases is silent; one with phrases, but none in
    # the person's language, says the translated generic one.
    said = [
        agent.chat_log(result.conversation_id)[-3]
        for result in (silent, french, german)
    ]
    assert all(call.tool_calls for call in said)
    assert [call.content for call in said] == [None, "Un instant.", "Einen Moment."]


@pytest.mark.parametrize("agent_options", [options(DOMAIN)])
async def test_announcement_reaches_the_pipeline_before_the_result(
    agent: Agent, hass_ws_client: Any
) -> None:
    agent.server.script = [
        tool_call_reply(("desktop_assistant__weather", '{"place": "Rome"}')),
        text_reply("Sunny in Rome."),
    ]
    events = await run_text_pipeline(
        agent.hass, hass_ws_client, agent.entity_id, "Weather in Rome?"
    )
    deltas = [
        event["data"]["chat_log_delta"]
        for event in events
        if event["type"] == "intent-progress" and "chat_log_delta" in event["data"]
    ]

    kinds = [
        "announcement"
        if delta.get("content") == "Checking the weather."
        else "tool_result"
        if delta.get("role") == "tool_result"
        else "answer"
        if delta.get("content")
        else None
        for delta in deltas
    ]
    assert [kind for kind in kinds if kind] == ["announcement", "tool_result", "answer"]
