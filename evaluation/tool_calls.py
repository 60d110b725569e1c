"""Checks how well the model on your llama-server calls tools, through the agent.

Runs a Home Assistant in this process with the agent on the llama-server at
URL, offering the example tool files (examples/tools/) through the tool
files' own API. Their web services (OpenWeatherMap, SearXNG, TomTom) are
local stand-ins that answer in the real services' wire format; the calendar
is a vdir written for the run, home is Oslo and the trip starts in Utrecht
(tool_world.py).

Each question is asked in a new conversation, in its own language. For each
it prints PASS or FAIL per expectation: the right tool (or none, for the
plain question), the right arguments, an answer in the question's language;
and the latency: to the first words and to the whole answer. A summary line
per question and the totals say: right tool, right arguments, answered
without a tool when none was needed, valid replies (none the agent could not
read), latency and prompt tokens per question. It exits with 1 when any
expectation failed.

`--tool-calls` is the agent's option: native (the template's own tool
calls), constrained (a reply held to a JSON schema of the tools) or auto
(constrained where the server's template cannot call tools).
`--tool-order reversed` and `--answer-last` are the eval's own: they
measure whether the order the tools are offered in moves the model.
`--questions FILE` asks a question file's questions instead (such as
evaluation/questions/held_out.toml; question_run.py), with the Assist API,
and reports each measure per language.

Run: scripts/eval-tools URL [--model ID] [--api-key KEY] [--timeout S]
[--tool-calls auto|native|constrained] [--tool-order name|reversed]
[--answer-last] [--questions FILE]
(URL as the integration takes it, e.g. http://192.168.1.20:8181/v1)
"""

import argparse
import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache, partial
import json
from pathlib import Path
import sys
import tempfile
from typing import Any

import aiohttp
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.util import dt as dt_util
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from custom_components.desktop_assistant.agent.language import MIN_WORDS
from custom_components.desktop_assistant.const import (
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
    TOOL_CALLS_AUTO,
    TOOL_CALLS_MODES,
)
from evaluation.question_file import read_questions
from evaluation.question_run import async_run_file
from evaluation.tool_order import NAME, TOOL_ORDERS, offered_order
from evaluation.tool_totals import Tally, milliseconds, yes
from evaluation.tool_world import web_services, write_config_folder
from tests.harness.agent_entry import async_add_agent
from tests.harness.assist_tools import async_set_up_assist
from tests.harness.home_assistant import Answer, converse, running_home_assistant

# The answer's language is told apart from these.
LANGUAGES = ["en", "it", "de", "fr", "es", "nl", "pt"]
LANGUAGE_NAMES = {
    "en": "English",
    "it": "Italian",
    "nl": "Dutch",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
}


def empty(value: Any) -> bool:
    """An argument left out or empty, which the tool files treat alike."""
    return value in (None, "")


def mentions(word: str) -> Callable[[Any], bool]:
    """An argument that contains `word`, in any case."""
    return lambda value: isinstance(value, str) and word in value.lower()


@dataclass(frozen=True)
class Case:
    """A question and what a good model does with it."""

    question: str
    language: str
    # The tool it must call (the file's name), or None for no tool.
    tool: str | None
    # What each argument must satisfy, and how that reads.
    arguments: dict[str, tuple[Callable[[Any], bool], str]]


# Long: a table of the evaluation's questions, one case each.
def cases(today: date) -> list[Case]:
    """The seed's live run; `today` in Home Assistant's time zone."""
    tomorrow = (today + timedelta(days=1)).isoformat()
    return [
        Case("What time is it?", "en", "now", {}),
        Case("Che ore sono?", "it", "now", {}),
        Case(
            "What is on my calendar tomorrow?",
            "en",
            "calendar",
            {
                "start": (lambda value: value == tomorrow, f"start {tomorrow}"),
                "days": (lambda value: value in (None, "", 1, "1"), "days 1 or empty"),
            },
        ),
        Case(
            "How is the weather?",
            "en",
            "weather",
            {
                "place": (empty, "place empty (home)"),
                "when": (lambda value: empty(value) or value == "now", "when now"),
            },
        ),
        Case(
            "Will it rain in Rome tomorrow?",
            "en",
            "weather",
            {
                "place": (mentions("rome"), "place Rome"),
                "when": (lambda value: value == "tomorrow", "when tomorrow"),
            },
        ),
        Case(
            "Search the web for Kokoro TTS.",
            "en",
            "search",
            {"query": (mentions("kokoro"), "query with Kokoro")},
        ),
        Case(
            "How long does it take to drive to Schiphol airport?",
            "en",
            "travel",
            {
                "origin": (empty, "origin empty (home)"),
                "destination": (mentions("schiphol"), "destination Schiphol"),
            },
        ),
        # Plain questions: a good model answers them without a tool.
        Case("How far away is the Moon?", "en", None, {}),
        Case("Tell me a short joke.", "en", None, {}),
        Case("Thank you, that is all.", "en", None, {}),
        Case("What is the capital of France?", "en", None, {}),
        Case("Raccontami una barzelletta.", "it", None, {}),
        Case("Grazie, è tutto.", "it", None, {}),
    ]


@cache
def identifier() -> LanguageIdentifier:
    """py3langid's model, telling LANGUAGES apart."""
    model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    model.set_languages(LANGUAGES)
    return model


def language_of(text: str) -> str:
    """The language the text is most likely in, among LANGUAGES."""
    language, _ = identifier().classify(text)
    return language


def check(case: Case, answer: Answer) -> list[tuple[bool, str]]:
    """Each expectation of the case: passed, and what it says."""
    if answer.error is not None or answer.speech is None:
        return [(False, f"an answer (the agent raised {answer.error!r})")]
    called = [call.tool_name.removeprefix(f"{DOMAIN}__") for call in answer.tool_calls]
    checks: list[tuple[bool, str]] = []
    if case.tool is None:
        checks.append((not called, f"calls no tool (called: {called or 'none'})"))
    else:
        checks.append(
            (case.tool in called, f"calls {case.tool} (called: {called or 'none'})")
        )
        call = next(
            (c for c in answer.tool_calls if c.tool_name == f"{DOMAIN}__{case.tool}"),
            None,
        )
        for name, (accepts, wanted) in case.arguments.items():
            value = call.tool_args.get(name) if call is not None else None
            checks.append(
                (
                    call is not None and accepts(value),
                    f"{wanted} (got {json.dumps(value, ensure_ascii=False)})",
                )
            )
    checks.append(language_check(case, answer))
    return checks


def language_check(case: Case, answer: Answer) -> tuple[bool, str]:
    """Whether the answer is in the question's language, when that can be told.

    An answer of fewer than MIN_WORDS words ("Paris") says too little about
    its language, as for the agent's detector: it is not judged.
    """
    assert answer.speech is not None
    heard = answer.speech.strip()
    answered = not answer.is_error and not answer.fault
    wanted = LANGUAGE_NAMES[case.language]
    if heard and len(heard.split()) < MIN_WORDS:
        return (
            answered,
            f"answers in {wanted} (too short to tell): {heard!r}{fault_hint(answer)}",
        )
    language = language_of(heard) if heard else "none"
    return (
        answered and language == case.language,
        f"answers in {wanted} "
        f"(detected {language}): {heard[:100]!r}{fault_hint(answer)}",
    )


def fault_hint(answer: Answer) -> str:
    """Say when what was heard ends with the agent's fault sentence."""
    if answer.fault:
        return (
            f" - the agent's fault sentence ({answer.fault}: llama-server failed), "
            "not the model's answer"
        )
    if answer.is_error:
        return " - an error response of the agent, not the model's answer"
    return ""


async def first_model(url: str, api_key: str | None) -> str:
    """The first model the server lists."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/models", headers=headers) as response,
    ):
        response.raise_for_status()
        body = await response.json(content_type=None)
    return body["data"][0]["id"]


async def add_agent(
    hass: HomeAssistant,
    url: str,
    model: str,
    api_key: str | None,
    options: dict[str, Any],
) -> str:
    """Our agent for the server, offering the tool files; return its entity id.

    `options` are the agent's options the run sets (tool calls, timeout...).
    """
    try:
        _, entity_id = await async_add_agent(
            hass,
            url,
            DEFAULT_AGENT_OPTIONS
            | {
                CONF_MODEL: model,
                CONF_LLM_HASS_API: [DOMAIN],
            }
            | options,
            title=url,
            data={CONF_API_KEY: api_key} if api_key else None,
            agent_title=model,
        )
    except AssertionError:
        raise SystemExit(f"eval-tools: could not set up the agent for {url}") from None
    return entity_id


async def served_model(
    url: str, model: str | None, api_key: str | None
) -> tuple[str, str | None]:
    """The server's OpenAI URL (ending in /v1) and the model: as given, or its first.

    None for the model when the server lists none (said on the way).
    """
    url = url.rstrip("/")
    if not url.endswith("/v1"):
        url = f"{url}/v1"
    if model is None:
        try:
            model = await first_model(url, api_key)
        except (aiohttp.ClientError, ValueError, LookupError) as err:
            print(f"eval-tools: no model list at {url}/models: {err!r}")
    return url, model


# Long: one run against one server: its Home Assistant, the stand-ins,
# every case and the totals share it.
async def evaluate(
    url: str,
    model: str | None,
    api_key: str | None,
    options: dict[str, Any],
    *,
    examples: bool = True,
    tool_order: str = NAME,
    answer_last: bool = False,
    questions: Path | None = None,
) -> bool:
    """Ask each question and print the checks and totals; return whether all passed.

    `options` are the agent's options the run sets; without `examples` the
    tool files' example questions are left out of their descriptions. The
    tools are offered in `tool_order`, the answer branch last if
    `answer_last` (`offered_order`). With `questions`, a question file's
    questions are asked instead, measured per language.
    """
    url, model = await served_model(url, model, api_key)
    if model is None:
        return False
    settings = ", ".join(f"{name} {value}" for name, value in options.items())
    print(
        f"eval-tools: {model} at {url}, {settings}, examples {yes(examples)}, "
        f"tool order {tool_order}, answer branch {'last' if answer_last else 'first'}\n"
    )
    tally = Tally()
    with (
        tempfile.TemporaryDirectory() as work_dir,
        offered_order(tool_order, answer_last=answer_last),
    ):
        async with running_home_assistant() as hass, web_services() as urls:
            today = dt_util.now().date()
            await hass.async_add_executor_job(
                partial(write_config_folder, examples=examples),
                Path(hass.config.path(DOMAIN)),
                Path(work_dir),
                urls,
                hass.config.time_zone,
                today + timedelta(days=1),
            )
            if questions is not None:
                await async_set_up_assist(hass)
                options = options | {CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}
            agent_id = await add_agent(hass, url, model, api_key, options)
            if questions is not None:
                await async_run_file(hass, agent_id, questions)
                return True
            verdicts = [
                verdict
                for case in cases(today)
                for verdict in await ask(hass, agent_id, case, tally)
            ]
    passed = sum(verdicts)
    print(f"\n{passed} of {len(verdicts)} expectations passed")
    tool_calls = options.get(CONF_TOOL_CALLS, TOOL_CALLS_AUTO)
    print(f"Totals (tool calls {tool_calls}):", *tally.lines(), sep="\n")
    return passed == len(verdicts)


async def ask(
    hass: HomeAssistant, agent_id: str, case: Case, tally: Tally
) -> list[bool]:
    """Ask one question; print its checks and summary; return its verdicts."""
    answer = await converse(hass, agent_id, case.question, None, case.language)
    print(
        f"{case.question}  (first words {milliseconds(answer.first_delta)},"
        f" answer {milliseconds(answer.seconds)})"
    )
    checks = check(case, answer)
    for ok, text in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {text}")
    for result in answer.tool_results:
        if result.result.error:
            print(f"  note  {result.tool_name} answered: {result.result.data}")
    print(tally.add(case, answer, checks))
    return [ok for ok, _ in checks]


HELP = """\
Asks the model at URL questions through this integration's agent, as Home
Assistant would: some that need one of the example tools (the time, the
calendar, the weather, a web search, a travel time) and some plain ones, each
in a new conversation in its own language. The tools' web services are stand-ins
on this machine: nothing goes out but the requests to URL. As each question is
answered it prints PASS or FAIL for each thing expected of it (the right tool
or none, the right arguments, an answer in the question's language; one of
fewer than three words is too short to tell), then the totals."""
TOTALS = """\
the totals:
  right tool            tool questions where the model called the tool needed
  right arguments       tool questions where every argument checked was right
  answered without a tool
                        plain questions answered without calling any tool
  valid replies         questions whose reply the agent could read
  latency (median)      seconds to the first words and to the whole answer
  prompt tokens per question (median), and the share of them llama-server
                        read from its cache instead of computing them again
The exit status is 0 when every expectation passed, 1 otherwise."""


def argument_parser() -> argparse.ArgumentParser:
    """The command line of scripts/eval-tools."""
    parser = argparse.ArgumentParser(
        prog="scripts/eval-tools",
        description=HELP,
        epilog=TOTALS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "url", help="llama-server's OpenAI API, e.g. http://HOST:8181/v1"
    )
    parser.add_argument(
        "--model", help="model id (default: the first the server lists)"
    )
    parser.add_argument("--api-key", help="llama-server's --api-key, if it has one")
    parser.add_argument(
        "--timeout", type=float, default=60, help="seconds a request may take"
    )
    parser.add_argument(
        "--tool-calls",
        choices=TOOL_CALLS_MODES,
        default=TOOL_CALLS_AUTO,
        help="native: the template's own tool calls; constrained: a reply held "
        "to a JSON schema of the tools; auto (default): constrained where the "
        "server's template cannot call tools",
    )
    parser.add_argument(
        "--temperature", type=float, help="the agent's temperature (default: its own)"
    )
    parser.add_argument(
        "--without-examples",
        action="store_true",
        help="leave the tool files' example questions out of their descriptions",
    )
    parser.add_argument(
        "--tool-order",
        choices=TOOL_ORDERS,
        default=NAME,
        help="offer the tools by name (default, as the agent does) or reversed: "
        "the prompt's tool list and the reply schema's tool branches",
    )
    parser.add_argument(
        "--questions",
        type=Path,
        help="ask a question file's questions (evaluation/questions/held_out.toml"
        " is one) instead of the eval's own, and report per language",
    )
    parser.add_argument(
        "--answer-last",
        action="store_true",
        help="put the constrained reply schema's answer branch after the tools' "
        "(the agent puts it first)",
    )
    return parser


def main() -> None:
    """Parse the arguments and run."""
    # A line as each question is answered, also into a file or a pipe.
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    arguments = argument_parser().parse_args()
    if arguments.questions is not None:
        # A file that is no question file is said before Home Assistant starts.
        try:
            read_questions(arguments.questions)
        except ValueError as err:
            raise SystemExit(f"eval-tools: {err}") from None
    options: dict[str, Any] = {
        CONF_TOOL_CALLS: arguments.tool_calls,
        CONF_REQUEST_TIMEOUT: arguments.timeout,
    }
    if arguments.temperature is not None:
        options[CONF_TEMPERATURE] = arguments.temperature
    ok = asyncio.run(
        evaluate(
            arguments.url,
            arguments.model,
            arguments.api_key,
            options,
            examples=not arguments.without_examples,
            tool_order=arguments.tool_order,
            answer_last=arguments.answer_last,
            questions=arguments.questions,
        )
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
