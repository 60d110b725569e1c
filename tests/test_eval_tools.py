"""scripts/eval-tools against the scripted llama-server stand-in.

The stand-in plays a model: for each question of the live run it calls a
tool (or none) and then answers. A good model passes every expectation; a
model that picks wrong tools, arguments or language fails exactly those.
"""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import date, timedelta
import json
from pathlib import Path
import sys
import time
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.http.config import DATA_STORE as HTTP_CONFIG_STORE
from homeassistant.helpers import llm
import pytest

from evaluation.tool_calls import Case, check
from tests.harness.home_assistant import Answer, running_home_assistant
from tests.harness.llama_server import (
    LlamaServerStandIn,
    Reply,
    error_body,
    serve,
    text_reply,
    tool_call_reply,
)

ROOT = Path(__file__).resolve().parent.parent

# Question -> (tool file and arguments, or None; the answer after it).
GOOD_MODEL: dict[str, tuple[tuple[str, dict[str, Any]] | None, str]] = {
    "What time is it?": (("now", {}), "It is ten past two in the afternoon."),
    "Che ore sono?": (("now", {}), "Sono le due e dieci del pomeriggio."),
    "What is on my calendar tomorrow?": (
        ("calendar", {"start": "TOMORROW"}),
        "Tomorrow you have a team lunch at half past twelve.",
    ),
    "How is the weather?": (
        ("weather", {}),
        "It is snowing lightly at home, minus three degrees.",
    ),
    "Will it rain in Rome tomorrow?": (
        ("weather", {"place": "Rome", "when": "tomorrow"}),
        "Yes, light rain is expected in Rome tomorrow.",
    ),
    "Search the web for Kokoro TTS.": (
        ("search", {"query": "Kokoro TTS"}),
        "Kokoro is an open-weight text to speech model with 82 million parameters.",
    ),
    "How long does it take to drive to Schiphol airport?": (
        ("travel", {"destination": "Schiphol"}),
        "The drive to Schiphol takes about thirty-eight minutes with traffic.",
    ),
    "How far away is the Moon?": (
        None,
        "The Moon is about three hundred and eighty thousand kilometres away.",
    ),
    "Tell me a short joke.": (
        None,
        "Why did the scarecrow win a prize? He was outstanding.",
    ),
    "Thank you, that is all.": (None, "You are welcome, have a nice day."),
    "What is the capital of France?": (None, "The capital of France is Paris."),
    "Raccontami una barzelletta.": (
        None,
        "Perché il pomodoro arrossisce? Ha visto l'insalata.",
    ),
    "Grazie, è tutto.": (None, "Prego, buona giornata a te."),
}

# A model with faults: the wrong tool, a wrong argument, the wrong language,
# and a tool for a plain question.
BAD_MODEL = GOOD_MODEL | {
    "What time is it?": (("weather", {}), "It is ten past two in the afternoon."),
    "Will it rain in Rome tomorrow?": (
        ("weather", {"place": "Paris", "when": "tomorrow"}),
        "Yes, light rain is expected tomorrow.",
    ),
    "Che ore sono?": (("now", {}), "It is ten past two in the afternoon."),
    "How far away is the Moon?": (
        ("search", {"query": "distance to the Moon"}),
        "The Moon is about three hundred and eighty thousand kilometres away.",
    ),
}


def playing(model: dict[str, tuple[tuple[str, dict[str, Any]] | None, str]]) -> Any:
    """Answer each request as the model would at that point of its question."""

    def reply_to(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        question = next(
            message["content"]
            for message in reversed(messages)
            if message["role"] == "user"
            and not message["content"].startswith("Tool result of ")
        )
        # The agent puts the clock under the question; the question comes first.
        call, answer = next(
            value for text, value in model.items() if question.startswith(text)
        )
        constrained = "response_format" in body
        if call is None or after_tool_result(messages):
            return json_text({"answer": answer}) if constrained else text_reply(answer)
        name, arguments = call
        if arguments.get("start") == "TOMORROW":
            # The agent gave the model today's date with the question.
            today = question.split("Today's date is ")[1][:10]
            tomorrow = date.fromisoformat(today) + timedelta(days=1)
            arguments = arguments | {"start": tomorrow.isoformat()}
        name = f"desktop_assistant__{name}"
        if constrained and name not in branch_names(body):
            # The grammar lets the model call only the tools of its branches.
            return json_text({"answer": answer})
        if constrained:
            return json_text({"tool": name, "arguments": arguments})
        return tool_call_reply((name, json.dumps(arguments)))

    return reply_to


def branch_names(body: dict[str, Any]) -> list[str]:
    """The tools a constrained request's reply may call."""
    branches = body["response_format"]["json_schema"]["schema"]["anyOf"]
    return [
        b["properties"]["tool"]["const"] for b in branches if "tool" in b["properties"]
    ]


def after_tool_result(messages: list[dict[str, Any]]) -> bool:
    """Whether the request follows a tool's result, native or constrained."""
    last = messages[-1]
    return last["role"] == "tool" or last["content"].startswith("Tool result of ")


def json_text(reply: dict[str, Any]) -> Reply:
    """A constrained reply: its JSON text, a few characters a token."""
    text = json.dumps(reply, ensure_ascii=False)
    return text_reply(*(text[start : start + 4] for start in range(0, len(text), 4)))


@pytest.fixture
async def stand_in(socket_enabled: None) -> AsyncIterator[LlamaServerStandIn]:
    async with serve(LlamaServerStandIn()) as server:
        yield server


async def eval_tools(url: str, *flags: str) -> tuple[int, str]:
    """Run scripts/eval-tools's module; return its exit status and output."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "evaluation.tool_calls",
        url,
        *flags,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, output.decode()


def verdicts(output: str) -> list[str]:
    """The PASS/FAIL lines, stripped."""
    return [
        line.strip()
        for line in output.splitlines()
        if line.strip().startswith(("PASS", "FAIL"))
    ]


async def test_a_good_model_passes(stand_in: LlamaServerStandIn) -> None:
    stand_in.reply_to = playing(GOOD_MODEL)

    status, output = await eval_tools(stand_in.url)

    assert status == 0, output
    lines = verdicts(output)
    # The tool, each argument checked and the language, for each question.
    assert len(lines) == 35, output
    assert all(line.startswith("PASS") for line in lines), output
    assert "35 of 35 expectations passed" in output
    assert "note" not in output
    assert "tool calls auto" in output
    assert "  right tool (any call): 7 of 7 tool questions" in output
    assert "  right tool (the first call): 7 of 7 tool questions" in output
    assert "  answered without a tool: 6 of 6 plain questions" in output
    assert "  valid replies: 13 of 13 questions" in output
    assert f"gemma-3-12b-it-Q4_K_M.gguf at {stand_in.url}" in output
    for question in GOOD_MODEL:
        assert f"{question}  (first words " in output
    assert "PASS  answers in Italian (detected it): 'Sono le due" in output
    assert 'PASS  place Rome (got "Rome")' in output
    # The tools ran on the run's data, served by the stand-ins.
    tool_output = "\n".join(
        message["content"]
        for request in stand_in.chat_requests
        for message in request["messages"][-1:]
        if message["role"] == "tool"
    )
    for expected in (
        "Team lunch",
        "Oslo, NO now: light snow",
        "Rome, IT tomorrow",
        "Kokoro TTS - Hugging Face",
        "From Utrecht to Amsterdam Airport Schiphol (Haarlemmermeer)",
    ):
        assert expected in tool_output
    # Every request offered the tool files and the record's and memory's tools.
    assert {
        tuple(sorted(tool["function"]["name"] for tool in request["tools"]))
        for request in stand_in.chat_requests
        if "tools" in request
    } == {
        tuple(
            f"desktop_assistant__{name}"
            for name in (
                "calendar",
                "calendar_add",
                "now",
                "recall",
                "recall_conversations",
                "remember",
                "search",
                "travel",
                "weather",
            )
        )
    }


async def test_a_bad_model_fails_where_it_is_wrong(
    stand_in: LlamaServerStandIn,
) -> None:
    stand_in.reply_to = playing(BAD_MODEL)

    status, output = await eval_tools(stand_in.url)

    assert status == 1, output
    failures = [line for line in verdicts(output) if line.startswith("FAIL")]
    assert failures == [
        "FAIL  calls now (called: ['weather'])",
        "FAIL  answers in Italian (detected en): 'It is ten past two in the afternoon.'",
        'FAIL  place Rome (got "Paris")',
        "FAIL  calls no tool (called: ['search'])",
    ], output
    assert "31 of 35 expectations passed" in output


async def test_a_fault_sentence_is_named_as_such(
    stand_in: LlamaServerStandIn,
) -> None:
    """A question llama-server fails says so, not just "wrong language"."""
    play = playing(GOOD_MODEL)

    def reply_to(body: dict[str, Any]) -> Reply:
        if any(
            message["role"] == "user" and message["content"].startswith("Che ore")
            for message in body["messages"]
        ):
            return Reply(
                status=500, body=error_body(500, "out of memory", "server_error")
            )
        return play(body)

    stand_in.reply_to = reply_to

    status, output = await eval_tools(stand_in.url)

    assert status == 1, output
    failures = [line for line in verdicts(output) if line.startswith("FAIL")]
    assert failures == [
        "FAIL  calls now (called: none)",
        "FAIL  answers in Italian (detected it): 'Scusa, il server del modello "
        "linguistico ha segnalato un errore.' - the agent's fault sentence "
        "(server_error: llama-server failed), not the model's answer",
    ], output


async def test_a_server_that_is_down_is_reported(
    stand_in: LlamaServerStandIn,
) -> None:
    url = stand_in.url
    await stand_in.stop()

    status, output = await eval_tools(url)

    assert status != 0
    assert "Traceback" not in output, output


async def test_constrained_mode_asks_for_schema_held_replies(
    stand_in: LlamaServerStandIn,
) -> None:
    """`--tool-calls constrained`: every request holds the reply to the schema.

    A reply may call only the tools the question's words point to: "Che ore
    sono?" points to `now` through its Italian example questions.
    """
    stand_in.reply_to = playing(GOOD_MODEL)

    status, output = await eval_tools(stand_in.url, "--tool-calls", "constrained")

    assert status == 0, output
    assert "35 of 35 expectations passed" in output
    assert all("tools" not in request for request in stand_in.chat_requests)
    assert all("response_format" in request for request in stand_in.chat_requests)
    totals = output.split("Totals (tool calls constrained):\n")[1].splitlines()
    assert totals[:5] == [
        "  right tool (any call): 7 of 7 tool questions",
        "  right tool (the first call): 7 of 7 tool questions",
        "  right arguments: 7 of 7 tool questions",
        "  answered without a tool: 6 of 6 plain questions",
        "  valid replies: 13 of 13 questions",
    ]
    assert totals[5].startswith("  latency (median): first words ")
    assert totals[6].startswith("  prompt tokens per question (median): ")
    assert totals[7].startswith("  prompt tokens from llama-server's cache: ")
    summaries = [line for line in output.splitlines() if "summary:" in line]
    assert len(summaries) == 13
    assert summaries[-1].startswith(
        "  summary: answered without a tool yes, valid reply yes, prompt tokens "
    )


async def test_constrained_mode_counts_what_it_could_not_read(
    stand_in: LlamaServerStandIn,
) -> None:
    """A prose reply where the schema's JSON belongs is no valid reply, nor an answer."""
    play = playing(GOOD_MODEL)

    def reply_to(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"].startswith("How far away is the Moon?"):
            return text_reply("The Moon is far away.")
        if body["messages"][-1]["content"].startswith("Search the web"):
            return json_text({"tool": "desktop_assistant__search", "arguments": {}})
        return play(body)

    stand_in.reply_to = reply_to

    status, output = await eval_tools(stand_in.url, "--tool-calls", "constrained")

    assert status == 1, output
    assert "  right tool (any call): 7 of 7 tool questions" in output
    assert "  right arguments: 6 of 7 tool questions" in output
    assert "  answered without a tool: 5 of 6 plain questions" in output
    assert "  valid replies: 12 of 13 questions" in output
    assert (
        "  summary: right tool yes, right arguments no, valid reply yes, prompt tokens 84"
        in output
    )


def offered_tools(request: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A constrained request's tool list in the prompt, and its reply's branches.

    The branches as the schema lists them, the answer's as "answer".
    """
    system = request["messages"][0]["content"]
    listed = [
        line[2:].split(":")[0]
        for line in system.split("\nTools:\n")[1].splitlines()
        if line.startswith("- ")
    ]
    branches = [
        branch["properties"]["tool"]["const"]
        if "tool" in branch["properties"]
        else "answer"
        for branch in request["response_format"]["json_schema"]["schema"]["anyOf"]
    ]
    return listed, branches


async def test_tool_order_by_name_is_the_agents(stand_in: LlamaServerStandIn) -> None:
    """Without `--tool-order`, the tools come as the agent offers them: by name."""
    stand_in.reply_to = playing(GOOD_MODEL)

    status, output = await eval_tools(stand_in.url, "--tool-calls", "constrained")

    assert status == 0, output
    assert "tool order name, answer branch first" in output
    offered = [offered_tools(request) for request in stand_in.chat_requests]
    assert {tuple(listed) for listed, _ in offered} == {tuple(sorted(offered[0][0]))}
    assert len(offered[0][0]) == 9
    # "What is on my calendar tomorrow?" points to both calendar tools.
    assert max(len(branches) for _, branches in offered) >= 3
    for _, branches in offered:
        assert branches[0] == "answer"
        assert branches[1:] == sorted(branches[1:]), branches


async def test_tool_order_reversed_reaches_the_prompt_and_the_branches(
    stand_in: LlamaServerStandIn,
) -> None:
    """`--tool-order reversed`: the same tools, last name first, in both places."""
    stand_in.reply_to = playing(GOOD_MODEL)

    status, output = await eval_tools(
        stand_in.url, "--tool-calls", "constrained", "--tool-order", "reversed"
    )

    assert status == 0, output
    assert "tool order reversed, answer branch first" in output
    # The order moves nothing else: the same questions pass as by name.
    assert "35 of 35 expectations passed" in output
    offered = [offered_tools(request) for request in stand_in.chat_requests]
    for listed, branches in offered:
        assert len(listed) == 9
        assert listed == sorted(listed, reverse=True), listed
        assert branches[0] == "answer"
        assert branches[1:] == sorted(branches[1:], reverse=True), branches
    assert max(len(branches) for _, branches in offered) >= 3


async def test_answer_last_puts_the_answer_branch_after_the_tools(
    stand_in: LlamaServerStandIn,
) -> None:
    stand_in.reply_to = playing(GOOD_MODEL)

    status, output = await eval_tools(
        stand_in.url, "--tool-calls", "constrained", "--answer-last"
    )

    assert status == 0, output
    assert "tool order name, answer branch last" in output
    assert "35 of 35 expectations passed" in output
    offered = [offered_tools(request) for request in stand_in.chat_requests]
    for listed, branches in offered:
        assert listed == sorted(listed)
        assert branches[:-1] == sorted(branches[:-1]), branches
        assert branches[-1] == "answer"
    assert max(len(branches) for _, branches in offered) >= 3


async def test_tool_order_reversed_in_native_mode(stand_in: LlamaServerStandIn) -> None:
    """Natively, the request's `tools` come last name first."""
    stand_in.reply_to = playing(GOOD_MODEL)

    status, output = await eval_tools(
        stand_in.url, "--tool-calls", "native", "--tool-order", "reversed"
    )

    assert status == 0, output
    names = {
        tuple(tool["function"]["name"] for tool in request["tools"])
        for request in stand_in.chat_requests
        if "tools" in request
    }
    (offered,) = names
    assert len(offered) == 9
    assert list(offered) == sorted(offered, reverse=True)


QUESTION_FILE = """
[[question]]
text = "Che tempo fa domani a Roma?"
language = "it"
tools = ["weather"]
arguments = { place = "roma|rome", when = "tomorrow" }

[[question]]
text = "And in Oslo?"
after = "What's the weather in Rome?"
language = "en"
tools = ["weather"]
arguments = { place = "oslo" }

[[question]]
text = "Good night!"
language = "en"
tools = []
"""
FILE_MODEL: dict[str, tuple[tuple[str, dict[str, Any]] | None, str]] = {
    "Che tempo fa domani a Roma?": (
        ("weather", {"place": "Rome", "when": "tomorrow"}),
        "Domani a Roma pioggia leggera.",
    ),
    "What's the weather in Rome?": (("weather", {"place": "Rome"}), "Clear."),
    # The wrong place: its argument fails, the tool is right.
    "And in Oslo?": (("weather", {"place": "Rome"}), "Snow in Oslo."),
    "Good night!": (None, "Good night!"),
}


async def test_a_question_file_is_measured_per_language(
    stand_in: LlamaServerStandIn, tmp_path: Path
) -> None:
    """`--questions FILE`: follow-ups asked after their question, a table per language."""
    questions = tmp_path / "questions.toml"
    questions.write_text(QUESTION_FILE, encoding="utf-8")
    stand_in.reply_to = playing(FILE_MODEL)

    status, output = await eval_tools(
        stand_in.url, "--tool-calls", "constrained", "--questions", str(questions)
    )

    assert status == 0, output
    assert f"3 questions of {questions}" in output
    table = output.split("Per language (questions of each kind):\n")[1].splitlines()
    assert table[0] == (
        "| language | narrowing recall | first call right | only right tools "
        "| right arguments | plain without a tool | valid replies |"
    )
    assert table[2:4] == [
        "| en | 1 of 1 | 1 of 1 | 1 of 1 | 0 of 1 | 1 of 1 | 2 of 2 |",
        "| it | 1 of 1 | 1 of 1 | 1 of 1 | 1 of 1 | 0 of 0 | 1 of 1 |",
    ]
    # The follow-up went in the conversation of its question, whose words
    # pointed its reply to the weather.
    follow_up = next(
        request
        for request in stand_in.chat_requests
        if request["messages"][-1]["content"].startswith("And in Oslo?")
    )
    first_question = next(m for m in follow_up["messages"] if m["role"] == "user")
    assert first_question["content"].startswith("What's the weather in Rome?")
    assert "desktop_assistant__weather" in branch_names(follow_up)


async def test_a_file_that_is_no_question_file_is_one_line(tmp_path: Path) -> None:
    questions = tmp_path / "questions.toml"
    questions.write_text('[[question]]\ntext = "Hi"\n', encoding="utf-8")

    status, output = await eval_tools(
        "http://127.0.0.1:9/v1", "--questions", str(questions)
    )

    assert status == 1, output
    assert output.strip().endswith(
        f"{questions}: not a question file (KeyError('language'))"
    )
    assert "Traceback" not in output


async def test_its_home_assistant_keeps_its_web_server_config(
    socket_enabled: None,
) -> None:
    """Nothing to revert: Home Assistant would restart five minutes into a run."""
    async with running_home_assistant() as hass:
        store = hass.data[HTTP_CONFIG_STORE]
        assert store.pending is None
        assert store.revert_deadline is None


async def test_a_one_word_right_answer_passes(stand_in: LlamaServerStandIn) -> None:
    """ "Paris" says too little of its language to judge it; it is right all the same."""
    stand_in.reply_to = playing(
        GOOD_MODEL | {"What is the capital of France?": (None, "Paris.")}
    )

    status, output = await eval_tools(stand_in.url)

    assert status == 0, output
    assert "PASS  answers in English (too short to tell): 'Paris.'" in output
    assert "35 of 35 expectations passed" in output


@pytest.mark.parametrize(
    ("question", "language", "name", "said"),
    [
        ("Wie spät ist es?", "de", "German", "Es ist zehn nach zwei am Nachmittag."),
        ("Quelle heure est-il ?", "fr", "French", "Il est quatorze heures dix."),
    ],
)
def test_a_german_or_french_question_is_judged_in_its_language(
    question: str, language: str, name: str, said: str
) -> None:
    case = Case(question, language, "now", {})
    called = conversation.AssistantContent(
        agent_id="conversation.agent",
        tool_calls=[llm.ToolInput("desktop_assistant__now", {}, id="call_now")],
    )
    answer = Answer("c1", said, False, None, 0.1, 0.2, [called])

    assert check(case, answer) == [
        (True, "calls now (called: ['now'])"),
        (True, f"answers in {name} (detected {language}): {said!r}"),
    ]
    english = replace(answer, speech="It is ten past two in the afternoon.")
    assert check(case, english)[-1][0] is False


# Each request waits this long: twenty requests of a run take over five
# minutes, when Home Assistant reverts a web server config nobody confirmed.
SLOW_REPLY = 16.0


@pytest.mark.timeout(600)
async def test_a_run_longer_than_five_minutes_prints_as_it_goes_and_no_traceback(
    stand_in: LlamaServerStandIn,
) -> None:
    play = playing(GOOD_MODEL)

    def slowly(body: dict[str, Any]) -> Reply:
        return replace(play(body), delay=SLOW_REPLY)

    stand_in.reply_to = slowly
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "evaluation.tool_calls",
        stand_in.url,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    lines: list[str] = []
    asked_by_first_verdict = None
    while line := (await process.stdout.readline()).decode():
        lines.append(line)
        if asked_by_first_verdict is None and line.strip().startswith("PASS"):
            asked_by_first_verdict = len(stand_in.chat_requests)
    status = await process.wait()
    output = "".join(lines)

    assert time.monotonic() - started > 300
    assert status == 0, output
    assert "35 of 35 expectations passed" in output
    assert "Traceback" not in output, output
    assert "Pending HTTP config" not in output, output
    # The first question's verdicts came while the run went on, not at its end.
    assert asked_by_first_verdict is not None
    assert asked_by_first_verdict < len(stand_in.chat_requests) / 2
