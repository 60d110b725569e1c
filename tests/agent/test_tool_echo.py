"""An answer that repeats a tool's own words is heard as our sentence.

A small model answers with a failed tool's error text, or with a tool's
description, as if it were the answer. The person hears a short sentence
in their language naming what failed; the record keeps the model's words
and the sentence. The stand-in answers as such a model does.
"""

from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
import pytest

from custom_components.desktop_assistant.agent.echo import (
    EchoGuard,
    ToolWords,
    _before_quotes,
)
from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from tests.harness.agent import Agent, run_text_pipeline, speech
from tests.harness.llama_server import MODEL_ID, Reply, text_reply, tool_call_reply

ERROR = "no OpenWeatherMap key is set: add KEY= to the WEATHER_ENV file"
WEATHER = f"""\
description = "Current weather for a place."
command = ["echo", "error: {ERROR}"]

[params.place]
type = "string"
description = "City name"
"""
NOW = """\
description = "The current time in the home's time zone, as hours and minutes."
command = ["echo", "14:05"]
"""
HEARD = {
    "en": f"I couldn't use weather: {ERROR}.",
    "it": f"Non sono riuscito a usare weather: {ERROR}.",
}
DESCRIBED = {
    "en": "Sorry, I couldn't answer: the language model repeated what the tool"
    " now is for instead of using it.",
    "de": "Entschuldigung, ich konnte nicht antworten: Das Sprachmodell hat"
    " wiederholt, wofür das Werkzeug now da ist, statt es zu verwenden.",
}


@pytest.fixture
def tool_files() -> dict[str, str]:
    return {"weather": WEATHER, "now": NOW}


@pytest.fixture
def agent_options() -> dict[str, Any]:
    return DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]}


def failed_weather_then(*pieces: str) -> list[Any]:
    """The model calls the weather tool, which fails; then it writes `pieces`."""
    return [
        tool_call_reply(("desktop_assistant__weather", '{"place": "Rome"}')),
        text_reply(*pieces),
    ]


async def recorded(hass_ws_client: Any, agent: Agent, conversation_id: str) -> Any:
    """The conversation's entries as the panel reads them: (kind, text, fault)."""
    await agent.hass.async_block_till_done()
    client = await hass_ws_client(agent.hass)
    await client.send_json_auto_id(
        {"type": f"{DOMAIN}/conversations/get", "conversation_id": conversation_id}
    )
    reply = await client.receive_json()
    assert reply["success"], reply
    return [
        (entry["kind"], entry["text"], entry.get("fault", entry.get("interrupted")))
        for entry in reply["result"]["entries"]
        if entry["kind"] != "tool_call"
    ]


@pytest.mark.parametrize("language", ["en", "it"])
async def test_a_tool_error_repeated_is_heard_as_our_sentence(
    agent: Agent, hass_ws_client: Any, language: str
) -> None:
    # As SmolLM2 does: the error text, cut into tokens, as the answer.
    agent.server.script = failed_weather_then(
        "No OpenWeatherMap key", " is set: add KEY= to", " the WEATHER_ENV file"
    )

    result = await agent.ask("Weather in Rome?", language=language)

    assert speech(result) == HEARD[language]
    response = result.response.as_dict()
    assert response["response_type"] == "error"
    assert response["speech_slots"] == {"fault": "tool_failed"}
    # What the model wrote and what the person heard, both kept.
    assert await recorded(hass_ws_client, agent, result.conversation_id) == [
        ("user", "Weather in Rome?", None),
        (
            "assistant",
            "No OpenWeatherMap key is set: add KEY= to the WEATHER_ENV file",
            True,
        ),
        ("fault", HEARD[language], "tool_failed"),
    ]


async def test_text_held_back_is_kept_when_the_server_fails_mid_reply(
    agent: Agent, hass_ws_client: Any
) -> None:
    """Held back as a possible echo, then the connection cut: nothing is lost."""
    agent.server.script = [
        tool_call_reply(("desktop_assistant__weather", '{"place": "Rome"}')),
        Reply(events=text_reply("No OpenWeatherMap", " key").events[:-2], cut=True),
    ]

    result = await agent.ask("Weather in Rome?")

    entries = await recorded(hass_ws_client, agent, result.conversation_id)
    assert [text for kind, text, _ in entries if kind == "assistant"] == [
        "No OpenWeatherMap key"
    ]
    assert entries[-1][0] == "fault"


async def test_the_repeated_error_never_reaches_the_dialog(
    agent: Agent, hass_ws_client: Any
) -> None:
    # The error text, with its mark, and more after it.
    agent.server.script = failed_weather_then(
        f"error: {ERROR}.", " Please try again later."
    )

    events = await run_text_pipeline(
        agent.hass, hass_ws_client, agent.entity_id, "Weather in Rome?"
    )

    streamed = "".join(
        delta.get("content") or ""
        for event in events
        if event["type"] == "intent-progress"
        and (delta := event["data"].get("chat_log_delta"))
    )
    assert "OpenWeatherMap" not in streamed
    (end,) = [event for event in events if event["type"] == "intent-end"]
    assert (
        end["data"]["intent_output"]["response"]["speech"]["plain"]["speech"]
        == HEARD["en"]
    )


@pytest.mark.parametrize("language", ["en", "de"])
async def test_a_tool_description_as_the_answer_is_heard_as_our_sentence(
    agent: Agent, language: str
) -> None:
    agent.server.script = [
        text_reply(
            "The current time in the home's ", "time zone, as hours and minutes."
        )
    ]

    result = await agent.ask("What time is it?", language=language)

    assert speech(result) == DESCRIBED[language]
    assert result.response.speech_slots == {"fault": "tool_described"}


async def test_an_answer_that_starts_like_a_tool_streams_as_it_is(
    agent: Agent,
) -> None:
    # Its first words are the description's, then it parts from them.
    agent.server.script = [text_reply("The current ", "time is 14:05.")]
    result = await agent.ask("What time is it?")
    assert speech(result) == "The current time is 14:05."
    assert result.response.speech_slots == {}

    # After a failed tool, an answer in the model's own words is said as it is.
    agent.server.script = failed_weather_then("I can't get the weather: no key is set.")
    result = await agent.ask("Weather in Rome?", result.conversation_id)
    assert speech(result) == "I can't get the weather: no key is set."


async def test_a_description_in_other_words_is_followed_by_our_sentence(
    agent: Agent,
) -> None:
    # As SmolLM2 answered "What time is it?" on develop's household: the
    # description's words, begun in its own. Shown as it streamed; the
    # sentence follows it.
    said = (
        "You can use this tool to answer questions about the current time"
        " in the home's time zone, as hours and minutes."
    )
    agent.server.script = [text_reply(said[:30], said[30:])]

    result = await agent.ask("What time is it?")

    assert speech(result) == f"{said}\n\n{DESCRIBED['en']}"
    assert result.response.speech_slots == {"fault": "tool_described"}


def test_an_error_repeated_with_its_value_misquoted_is_still_an_echo() -> None:
    """Errors quote the model's value; a model repeating one may misquote it."""
    error = "No exposed entities matched name 'homma_Ges_L_L'"
    guard = EchoGuard(
        [
            ToolWords("tool_failed", "HassTurnOn", text, "no match")
            for text in (error, *_before_quotes([error]))
        ]
    )

    shown = guard.pass_on("No exposed entities matched name ")
    shown += guard.pass_on("'homma_Ges_L_L_L_L_L_L_L")
    shown += guard.end()

    assert shown == ""
    assert guard.echo is not None
