"""Which tools a question points to, alone (no model), on the held-out questions.

Home Assistant offers what a household's agent gets: the example tool files
(their examples in six languages) and its own intents and tools through
the Assist API, timers included. The narrowing must offer the right tool
for nearly every question, in every language, follow-ups and two places in
one question included, and no tool for most plain questions.
"""

from collections import defaultdict
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
import pytest

from custom_components.desktop_assistant.agent.messages import format_tools
from custom_components.desktop_assistant.agent.narrowing import pointed_tools
from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.llm import tool_examples
from custom_components.desktop_assistant.runtime import DATA_TOOLS
from custom_components.desktop_assistant.tool_files.examples import install_examples
from evaluation.question_file import DEVELOPMENT, HELD_OUT, Question, read_questions
from tests.harness.agent import Agent
from tests.harness.assist_tools import async_assist_api, async_set_up_assist, short

LANGUAGES = ("en", "it", "nl", "de", "fr", "es")


@pytest.fixture
async def examples_installed(hass: HomeAssistant) -> None:
    """The example tool files in the config folder, before the agent starts."""
    await hass.async_add_executor_job(install_examples, Path(hass.config.path(DOMAIN)))


@pytest.fixture
async def offered(
    hass: HomeAssistant, examples_installed: None, agent: Agent
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, ...]]]:
    """The Assist API's tools for a satellite with timers, and their examples."""
    await async_set_up_assist(hass)
    api = await async_assist_api(hass, "en")
    return format_tools(api), tool_examples(api.tools, hass.data[DATA_TOOLS])


def offered_for(
    question: Question,
    tools: list[dict[str, Any]],
    examples: dict[str, tuple[str, ...]],
) -> set[str]:
    asked = [question.after, question.text] if question.after else [question.text]
    return {
        short(tool["function"]["name"])
        for tool in pointed_tools(tools, asked, examples)
    }


@pytest.mark.parametrize("path", [DEVELOPMENT, HELD_OUT], ids=lambda path: path.stem)
async def test_each_question_gets_its_tool_offered(
    offered: tuple[list[dict[str, Any]], dict[str, tuple[str, ...]]], path: Path
) -> None:
    tools, examples = offered
    names = {short(tool["function"]["name"]) for tool in tools}
    questions = read_questions(path)
    # Every tool a question needs is one the household offers.
    assert {
        tool for q in questions for tools_ in q.tools for tool in tools_
    } - names <= {
        "now",
        "GetDateTime",
    } and ({"now", "GetDateTime"} & names)
    assert {q.language for q in questions} == set(LANGUAGES)
    assert len(questions) >= 60
    assert any(q.after for q in questions)
    assert any(len(q.tools) > 1 for q in questions)

    recall: dict[str, list[bool]] = defaultdict(list)
    plain: list[bool] = []
    misses: list[str] = []
    branches: list[int] = []
    for question in questions:
        got = offered_for(question, tools, examples)
        branches.append(len(got))
        if not question.needs_tool:
            plain.append(not got)
            continue
        right = all(tools_ & got for tools_ in question.tools)
        recall[question.language].append(right)
        if not right:
            misses.append(f"{question.text} (offered {sorted(got)})")
    shares = {
        language: sum(hits) / len(hits) for language, hits in sorted(recall.items())
    }
    report = (
        f"recall by language {shares}; plain questions offered no tool: "
        f"{sum(plain)} of {len(plain)}; tools offered: "
        f"{sum(branches) / len(branches):.1f} of {len(tools)} on average; "
        f"misses: {misses}"
    )
    assert all(share >= 0.95 for share in shares.values()), report
    assert sum(plain) >= len(plain) / 2, report
    print(report)
