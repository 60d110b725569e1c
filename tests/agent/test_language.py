"""The language spoken: each question's, among the household's languages."""

from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from py3langid.langid import MODEL_FILE, LanguageIdentifier
import pytest

from custom_components.desktop_assistant.agent.language import (
    DETECTABLE_LANGUAGES,
    LanguageDetector,
)
from custom_components.desktop_assistant.const import (
    CONF_LANGUAGES,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from tests.harness.agent import Agent, speech
from tests.harness.llama_server import (
    MODEL_ID,
    Reply,
    error_body,
    text_reply,
    tool_call_reply,
)

from .test_agent_tool_files import TOOL_FILES

ITALIAN_FAULT = "Scusa, il server del modello linguistico ha segnalato un errore."
ENGLISH_FAULT = "Sorry, the language model server reported an error."
WEATHER_CALL = ("desktop_assistant__weather", '{"place": "Roma"}')


def options(**extra: Any) -> dict[str, Any]:
    return DEFAULT_AGENT_OPTIONS | {
        CONF_MODEL: MODEL_ID,
        CONF_LLM_HASS_API: [DOMAIN],
        **extra,
    }


@pytest.fixture
def tool_files() -> dict[str, str]:
    return TOOL_FILES


def announcement(agent: Agent, result: conversation.ConversationResult) -> str:
    """The text of the message carrying the tool call: the announcement."""
    (call,) = [
        item
        for item in agent.chat_log(result.conversation_id)
        if isinstance(item, conversation.AssistantContent) and item.tool_calls
    ]
    return call.content


async def ask_weather(agent: Agent, text: str) -> str:
    """Ask on an English pipeline; return the announcement the agent made."""
    agent.server.script = [tool_call_reply(WEATHER_CALL), text_reply("Sole.")]
    result = await agent.ask(text, language="en")
    assert speech(result) == "Sole."
    return announcement(agent, result)


async def ask_while_failing(agent: Agent, text: str) -> str:
    """Ask on an English pipeline while llama-server fails; return the speech."""
    agent.server.script = [
        Reply(status=500, body=error_body(500, "failed to load model", "server_error"))
    ]
    return speech(await agent.ask(text, language="en"))


@pytest.mark.parametrize("agent_options", [options(languages=["en", "it"])])
async def test_italian_question_on_an_english_pipeline(agent: Agent) -> None:
    assert await ask_weather(agent, "Che tempo fa domani a Roma?") == (
        "Controllo il meteo."
    )
    assert await ask_while_failing(agent, "Che ore sono adesso, per favore?") == (
        ITALIAN_FAULT
    )
    # English questions stay English.
    assert await ask_weather(agent, "What is the weather in Rome?") == (
        "Checking the weather."
    )
    assert await ask_while_failing(agent, "What time is it now?") == ENGLISH_FAULT


@pytest.mark.parametrize("agent_options", [options(languages=["en", "it"])])
async def test_two_words_are_in_the_pipelines_language(agent: Agent) -> None:
    assert await ask_weather(agent, "Meteo Roma?") == "Checking the weather."
    assert await ask_while_failing(agent, "Ciao, ci sei?") == ITALIAN_FAULT
    assert await ask_while_failing(agent, "Ci sei?") == ENGLISH_FAULT


@pytest.mark.parametrize("agent_options", [options()])
async def test_without_the_option_the_pipelines_language_is_used(
    agent: Agent,
) -> None:
    assert (
        agent.entry.subentries[next(iter(agent.entry.subentries))].data[CONF_LANGUAGES]
        == []
    )
    assert await ask_weather(agent, "Che tempo fa domani a Roma?") == (
        "Checking the weather."
    )
    assert await ask_while_failing(agent, "Che ore sono adesso, per favore?") == (
        ENGLISH_FAULT
    )


@pytest.fixture(scope="module")
def detector() -> LanguageDetector:
    return LanguageDetector(["en", "it", "pt-BR"])


@pytest.mark.parametrize(
    ("text", "pipeline", "expected"),
    [
        ("Accendi la luce della cucina", "en", "it"),
        ("Turn on the kitchen light", "it", "en"),
        # A verdict for the pipeline's language keeps its exact code.
        ("Turn on the kitchen light", "en-GB", "en-GB"),
        # The household's code, not the detector's.
        ("Qual é a previsão do tempo para amanhã?", "en", "pt-BR"),
        # Too short to tell.
        ("Accendi luce", "en", "en"),
        ("OK", "it", "it"),
        ("", "en", "en"),
    ],
)
def test_detect(
    detector: LanguageDetector, text: str, pipeline: str, expected: str
) -> None:
    assert detector.detect(text, pipeline) == expected


def test_the_pipelines_language_is_always_a_candidate() -> None:
    detector = LanguageDetector(["it"])
    assert detector.detect("Che tempo fa domani a Roma?", "en") == "it"
    assert detector.detect("What is the weather tomorrow?", "en-US") == "en-US"


def test_unknown_languages_are_ignored(caplog: pytest.LogCaptureFixture) -> None:
    detector = LanguageDetector(["it", "tlh"])
    assert detector.languages == {"it": "it"}
    assert "Cannot recognise the language tlh" in caplog.text


def test_detectable_languages_are_py3langids() -> None:
    model = LanguageIdentifier.from_model_file(MODEL_FILE)
    assert set(DETECTABLE_LANGUAGES) == set(model.labels) - {"zxx"}
