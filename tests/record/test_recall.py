"""The recall_conversations tool: words, days in HA's time zone, what it leaves out."""

from datetime import datetime
import json
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.util import dt as dt_util
import pytest

from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from custom_components.desktop_assistant.record import (
    RECALL_TOOL,
    RecallConversationsTool,
    Record,
)
from custom_components.desktop_assistant.record.search import search_words
from tests.harness.agent import Agent, speech
from tests.harness.llama_server import MODEL_ID, text_reply, tool_call_reply

from .conftest import seed, stored

CONTEXT = llm.LLMContext(
    platform="test", context=None, language="en", assistant=None, device_id=None
)


async def recall(hass: HomeAssistant, record: Record, **arguments: Any) -> Any:
    result = await RecallConversationsTool().async_call(
        hass, llm.ToolInput(RECALL_TOOL, arguments), CONTEXT
    )
    return result.data if not result.error else ("error", result.data["result"])


def utc(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


async def test_days_are_whole_days_in_home_assistants_time_zone(
    hass: HomeAssistant, record: Record
) -> None:
    await hass.config.async_update(time_zone="America/Los_Angeles")
    # 05:30 UTC on 10 March is 22:30 on 9 March in Los Angeles (UTC-7).
    await seed(hass, "late", utc("2026-03-10T05:30:00+00:00"), "The ravioli recipe")
    await seed(hass, "next", utc("2026-03-10T16:00:00+00:00"), "More ravioli")

    found = await recall(hass, record, query="ravioli", day="2026-03-09")
    assert [c["date"] for c in found["conversations"]] == ["2026-03-09 22:30"]
    found = await recall(hass, record, query="ravioli", day="2026-03-10")
    assert [c["date"] for c in found["conversations"]] == ["2026-03-10 09:00"]
    found = await recall(
        hass, record, query="ravioli", **{"from": "2026-03-09", "to": "2026-03-10"}
    )
    assert len(found["conversations"]) == 2
    found = await recall(hass, record, query="ravioli", **{"from": "2026-03-11"})
    assert found == {"conversations": []}
    assert await recall(hass, record, query="ravioli", day="9 March") == (
        "error",
        "error: dates must be ISO dates like 2026-11-03 (Invalid isoformat string: '9 March')",
    )
    found = await recall(
        hass, record, query="ravioli", **{"from": "2026-03-10", "to": "2026-03-09"}
    )
    assert found == ("error", "error: `from` must not be after `to`")


async def test_at_most_five_newest_first_with_snippets_device_and_preference(
    hass: HomeAssistant, record: Record
) -> None:
    now = dt_util.utcnow().timestamp()
    for n in range(7):
        await seed(
            hass,
            f"film{n}",
            now - 3600 * (7 - n),
            f"Which film was number {n}?",
            f"Film {n} was a comedy with the tango dancer" if n == 2 else "No idea",
            channel="voice",
            device=("dev", "Living room"),
        )
    found = (await recall(hass, record, query="film"))["conversations"]
    assert len(found) == 5
    assert [c["snippets"][0] for c in found] == [
        f"Which film was number {n}?" for n in (6, 5, 4, 3, 2)
    ]
    assert {(c["device"], c["channel"]) for c in found} == {("Living room", "voice")}
    # All the words beat some of them; with none having all, any word counts.
    found = (await recall(hass, record, query="film tango"))["conversations"]
    assert len(found) == 1
    assert found[0]["snippets"] == [
        "Which film was number 2?",
        "Film 2 was a comedy with the tango dancer",
    ]
    found = (await recall(hass, record, query="tango rumba"))["conversations"]
    assert len(found) == 1


@pytest.mark.parametrize(
    "query",
    [
        "what did we talk about last week?",
        "TV",
        "di cosa abbiamo parlato",
        "waar hebben we het over gehad",
        "der die und",
        "worüber haben wir gesprochen",
        "le la et les des une avec pour",
        "de quoi avons-nous parlé",
        "el la y los las una con para",
        "de qué hablamos",
        "",
    ],
)
async def test_a_query_of_filler_or_short_words_is_an_error(
    hass: HomeAssistant, record: Record, query: str
) -> None:
    kind, text = await recall(hass, record, query=query)
    assert kind == "error"
    assert text.startswith("error: the query has only short or common words")


@pytest.mark.parametrize(
    ("query", "searched"),
    [
        ("Was hat der Bäcker über die Brezel gesagt?", ["backer", "brezel"]),
        ("Qu'a dit la boulangère sur les croissants ?", ["boulangere", "croissants"]),
        ("¿Qué dijo el panadero de las magdalenas?", ["panadero", "magdalenas"]),
    ],
)
async def test_filler_of_six_languages_is_left_out_of_the_search(
    hass: HomeAssistant, record: Record, query: str, searched: list[str]
) -> None:
    assert search_words(query) == searched
    await seed(hass, "baker", dt_util.utcnow().timestamp(), " ".join(searched))
    found = await recall(hass, record, query=query)
    assert len(found["conversations"]) == 1


async def test_at_most_12_words_are_searched(
    hass: HomeAssistant, record: Record
) -> None:
    await seed(hass, "baker", dt_util.utcnow().timestamp(), "The baker's pretzels")
    # Filler and repeated words do not count.
    twelve = "what did the baker say " + " ".join(f"pretzel{n}" for n in range(11))
    found = await recall(hass, record, query=" ".join([twelve] * 3))
    assert len(found["conversations"]) == 1
    words = " ".join(f"wordy{n:03}" for n in range(180))
    assert await recall(hass, record, query=words) == (
        "error",
        "error: the query has 180 words to search for; use at most 12, the most"
        " distinctive ones",
    )
    assert "12 words" in RecallConversationsTool.description
    found = await recall(hass, record, query="baker pretzels")
    assert len(found["conversations"]) == 1


@pytest.mark.parametrize(
    "days",
    [
        {"day": "9999-12-31"},
        {"to": "9999-12-31"},
        {"from": "2026-01-01", "to": "9999-12-31"},
    ],
    ids=["day", "to", "from and to"],
)
async def test_a_day_past_any_timestamp_is_an_error_for_the_model(
    hass: HomeAssistant, record: Record, days: dict[str, str]
) -> None:
    await hass.config.async_update(time_zone="America/Los_Angeles")
    await seed(hass, "late", dt_util.utcnow().timestamp(), "The ravioli recipe")
    assert await recall(hass, record, query="ravioli", **days) == (
        "error",
        "error: dates must be between 0001-01-02 and 9999-12-30",
    )
    # The last day that has an end, and a first day far away, are days.
    found = await recall(hass, record, query="ravioli", to="9999-12-30")
    assert len(found["conversations"]) == 1
    found = await recall(hass, record, query="ravioli", **{"from": "9999-12-31"})
    assert found == {"conversations": []}


@pytest.mark.parametrize("day", [20261103, ["2026-11-03"], "+10000-01-01"], ids=repr)
async def test_a_day_that_is_no_iso_date_is_an_error_for_the_model(
    hass: HomeAssistant, record: Record, day: object
) -> None:
    kind, text = await recall(hass, record, query="ravioli", day=day)
    assert kind == "error"
    assert text.startswith("error: dates must be ISO dates like 2026-11-03 (")


@pytest.mark.parametrize(
    "agent_options",
    [DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]}],
)
async def test_the_agent_hears_the_date_error_and_answers(
    hass: HomeAssistant, agent: Agent
) -> None:
    agent.server.script = [
        tool_call_reply((RECALL_TOOL, '{"query": "pesto", "to": "9999-12-31"}')),
        text_reply("I could not search up to that day."),
    ]
    result = await agent.ask("What did I ask about pesto, ever?")
    assert speech(result) == "I could not search up to that day."
    answer = agent.server.chat_requests[1]["messages"][-1]["content"]
    assert answer == "error: dates must be between 0001-01-02 and 9999-12-30"
    agent.server.script = [text_reply("Yes.")]
    assert speech(await agent.ask("Still there?", result.conversation_id)) == "Yes."


@pytest.mark.parametrize(
    "agent_options",
    [DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]}],
)
async def test_the_agent_recalls_earlier_conversations_not_the_current_one(
    hass: HomeAssistant, agent: Agent
) -> None:
    agent.server.script = [text_reply("Boil the pasta, add the pesto.")]
    earlier = await agent.ask("How do I make pasta with pesto?")

    agent.server.script = [
        tool_call_reply((RECALL_TOOL, '{"query": "pesto"}')),
        text_reply("You asked about pesto pasta."),
    ]
    result = await agent.ask("What did I ask about pesto?")
    assert speech(result) == "You asked about pesto pasta."
    offered = agent.server.chat_requests[1]["tools"]
    (spec,) = [t for t in offered if t["function"]["name"] == RECALL_TOOL]
    assert spec["function"]["parameters"]["required"] == ["query"]
    # The tool's answer, as the model read it: the earlier conversation only,
    # though the current question has the word too.
    answer = json.loads(agent.server.chat_requests[2]["messages"][-1]["content"])
    (found,) = answer["conversations"]
    assert found["snippets"] == [
        "How do I make pasta with pesto?",
        "Boil the pasta, add the pesto.",
    ]
    assert found["channel"] == "text"
    current = await stored(hass, result.conversation_id)
    assert current["conversation_id"] != earlier.conversation_id
    assert current["entries"][1]["tool_name"] == RECALL_TOOL


async def test_the_tool_is_read_only_and_in_the_assist_api(
    hass: HomeAssistant, record: Record
) -> None:
    api = await llm.async_get_api(hass, llm.LLM_API_ASSIST, CONTEXT)
    (tool,) = [t for t in api.tools if t.name == RECALL_TOOL]
    assert tool.annotations.read_only
    assert not tool.annotations.destructive
    assert not tool.annotations.open_world
