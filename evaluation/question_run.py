"""scripts/eval-tools --questions FILE: a question file's run, measured per language.

The agent is offered the Assist API (the example tool files and Home
Assistant's own intents and tools) on a satellite that has timers. Each
question is asked in a new conversation, after its `after` question when
it is a follow-up. Per language: the narrowing's recall (the right tools
among those a constrained reply is offered), the first call right, only
the right tools called, the first call's arguments right, plain questions
answered without a tool, valid replies (none the agent could not read).
"""

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from homeassistant.core import HomeAssistant

from custom_components.desktop_assistant.agent.messages import format_tools
from custom_components.desktop_assistant.agent.narrowing import pointed_tools
from custom_components.desktop_assistant.llm import tool_examples
from custom_components.desktop_assistant.runtime import DATA_TOOLS
from evaluation.question_file import Question, read_questions
from tests.harness.assist_tools import SATELLITE, async_assist_api, short
from tests.harness.home_assistant import Answer, converse

MEASURES = (
    ("recall", "narrowing recall"),
    ("first", "first call right"),
    ("only", "only right tools"),
    ("arguments", "right arguments"),
    ("plain", "plain without a tool"),
    ("valid", "valid replies"),
)


@dataclass
class LanguageTally:
    """Each measure's passes, per language."""

    passes: dict[str, dict[str, list[bool]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )

    def add(self, language: str, measure: str, passed: bool) -> None:
        """Count one question's measure."""
        self.passes[language][measure].append(passed)

    def table(self) -> list[str]:
        """The measures, a language a row: passes of questions."""
        header = ["language", *(title for _, title in MEASURES)]
        rows = [
            [
                language,
                *(
                    f"{sum(hits)} of {len(hits)}"
                    for key, _ in MEASURES
                    for hits in [self.passes[language][key]]
                ),
            ]
            for language in sorted(self.passes)
        ]
        return [
            "| " + " | ".join(row) + " |"
            for row in [header, ["---"] * len(header), *rows]
        ]


async def async_offered(hass: HomeAssistant, question: Question) -> set[str]:
    """The tools a constrained reply to the question is offered (their short names)."""
    api = await async_assist_api(hass, question.language)
    asked = [question.after, question.text] if question.after else [question.text]
    examples = tool_examples(api.tools, hass.data[DATA_TOOLS])
    return {
        short(tool["function"]["name"])
        for tool in pointed_tools(format_tools(api), asked, examples)
    }


async def async_ask(
    hass: HomeAssistant, agent_id: str, question: Question, tally: LanguageTally
) -> None:
    """Ask one question (after its `after`); print and count its measures."""
    conversation_id = None
    if question.after:
        before = await converse(
            hass, agent_id, question.after, None, question.language, SATELLITE
        )
        conversation_id = before.conversation_id
    offered = await async_offered(hass, question)
    answer = await converse(
        hass, agent_id, question.text, conversation_id, question.language, SATELLITE
    )
    measures = measured(question, answer, offered)
    for measure, passed in measures.items():
        tally.add(question.language, measure, passed)
    called = [short(call.tool_name) for call in answer.tool_calls]
    heard = (answer.speech or "").strip()
    print(
        f"[{question.language}] {question.text}  (answer {answer.seconds:.1f} s)\n"
        f"  offered {sorted(offered) or 'none'}, called {called or 'none'}: "
        f"{heard[:100]!r}\n  "
        + ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in measures.items())
    )


def measured(question: Question, answer: Answer, offered: set[str]) -> dict[str, bool]:
    """Each measure that applies to the question: passed or not."""
    answered = answer.error is None and answer.speech is not None
    valid = answered and answer.fault != "unreadable"
    calls = answer.tool_calls
    called = [short(call.tool_name) for call in calls]
    if not question.needs_tool:
        return {"plain": valid and not answer.fault and not called, "valid": valid}
    first = calls[0] if calls else None
    first_right = first is not None and short(first.tool_name) in question.tools[0]
    return {
        "recall": all(tools & offered for tools in question.tools),
        "first": answered and first_right,
        "only": answered and bool(called) and all(map(question.right_tool, called)),
        "arguments": first_right
        and all(
            question.argument_right(name, first.tool_args.get(name))
            for name in question.arguments
        ),
        "valid": valid,
    }


async def async_run_file(hass: HomeAssistant, agent_id: str, path: Path) -> None:
    """Ask every question of the file; print the table per language."""
    questions = read_questions(path)
    print(f"{len(questions)} questions of {path}\n")
    tally = LanguageTally()
    for question in questions:
        await async_ask(hass, agent_id, question, tally)
    print("\nPer language (questions of each kind):", *tally.table(), sep="\n")
