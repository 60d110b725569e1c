"""The fault matrix of versus_core: each agent against a server or model that misbehaves."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from benchmarks.versus_agents import AGENTS, TOOL_CALL, add_agents
from custom_components.desktop_assistant.const import (
    DOMAIN,
)
from tests.harness.home_assistant import (
    Answer,
    converse,
)
from tests.harness.llama_server import (
    LlamaServerStandIn,
    Reply,
    chunk,
    serve,
    sse,
    text_reply,
    tool_call_reply,
)


@dataclass(frozen=True)
class Fault:
    """A fault of the server or the model, and the question it spoils."""

    name: str
    question: str
    # The stand-in's answers to the question's requests.
    script: Callable[[], list[Reply]] = list
    # Answers once the script is used up (a model that never stops calling tools).
    reply_to: Callable[[dict[str, Any]], Reply] | None = None
    server_down: bool = False


def cut_reply() -> list[Reply]:
    """An answer whose connection drops after a few words."""
    events = [
        sse(chunk({"role": "assistant", "content": None})),
        sse(chunk({"content": "Tomorrow in Rome it will "})),
        sse(chunk({"content": "be"})),
    ]
    return [Reply(events=events, cut=True)]


def always_a_tool(body: dict[str, Any]) -> Reply:
    """A model that calls a tool whenever tools are offered."""
    if body.get("tools"):
        return tool_call_reply(TOOL_CALL)
    return text_reply("It is ten past two.")


FAULTS = (
    Fault(
        "malformed tool arguments",
        "Will it rain in Rome tomorrow?",
        lambda: [
            tool_call_reply(
                (f"{DOMAIN}__weather", '{"place": "Rome", "when": tomorrow')
            ),
            text_reply("Sorry, I could not check the weather."),
        ],
    ),
    Fault(
        "an unknown tool",
        "Turn on the porch lights.",
        lambda: [
            tool_call_reply((f"{DOMAIN}__lights", '{"state": "on"}')),
            text_reply("I have no way to control the porch lights."),
        ],
    ),
    Fault(
        "two parallel tool calls",
        "What time and date is it?",
        lambda: [
            tool_call_reply(TOOL_CALL, ("llm__GetDateTime", "{}")),
            text_reply("It is ten past two on Monday."),
        ],
    ),
    Fault("the server down", "What time is it?", server_down=True),
    Fault("the stream cut mid-answer", "Will it rain in Rome tomorrow?", cut_reply),
    Fault("the round limit", "What time is it?", reply_to=always_a_tool),
)


NEXT_ANSWER = "Yes, I am still here."


@dataclass
class FaultOutcome:
    """What the person got from a fault, and from the question after it."""

    heard: str
    tool_results: str
    next_works: bool
    seconds: float


def heard(answer: Answer) -> str:
    """What the person hears from an answer."""
    if answer.error is not None:
        return (
            f"nothing (raises {type(answer.error).__name__}: {str(answer.error)[:80]})"
        )
    # One table cell: the paragraph before a fault sentence becomes a space.
    said = " ".join((answer.speech or "").split())
    if answer.is_error:
        return f'"{said}" (error response)'
    if answer.fault:
        return f'"{said}" (fault {answer.fault} after text)'
    return f'"{said}"'


def results_text(answer: Answer) -> str:
    """The tool results of the turn, in short."""
    if not answer.tool_results:
        return "none"
    return ", ".join(
        ("error" if item.result.error else "ok") for item in answer.tool_results
    )


async def run_fault(
    hass: HomeAssistant, stand_in: LlamaServerStandIn, agent_id: str, fault: Fault
) -> FaultOutcome:
    """Spoil a question with the fault, then ask another in the same conversation."""
    stand_in.script = fault.script()
    stand_in.reply_to = fault.reply_to
    port = stand_in.port
    if fault.server_down:
        await stand_in.stop()
    answer = await converse(hass, agent_id, fault.question, None)
    if fault.server_down:
        await stand_in.start(port)
    stand_in.script = [text_reply(NEXT_ANSWER)]
    stand_in.reply_to = None
    after = await converse(
        hass, agent_id, "Are you still there?", answer.conversation_id
    )
    return FaultOutcome(
        heard(answer),
        results_text(answer),
        after.error is None and after.speech == NEXT_ANSWER,
        answer.seconds,
    )


async def measure_faults(hass: HomeAssistant) -> dict[str, dict[str, FaultOutcome]]:
    """Each fault, for each agent, against the scripted stand-in."""
    outcomes: dict[str, dict[str, FaultOutcome]] = {}
    async with serve(LlamaServerStandIn()) as stand_in:
        agents = await add_agents(
            hass, stand_in.url, [llm.LLM_API_ASSIST], max_tokens=1024
        )
        for fault in FAULTS:
            outcomes[fault.name] = {
                name: await run_fault(hass, stand_in, agents[name], fault)
                for name in AGENTS
            }
    return outcomes


def print_faults(outcomes: dict[str, dict[str, FaultOutcome]]) -> None:
    """Print the fault matrix."""
    print("\nFaults, against the scripted llama-server stand-in\n")
    print(
        "| fault | agent | the person hears | tool results "
        "| next question answered | time (s) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for fault, by_agent in outcomes.items():
        for name, outcome in by_agent.items():
            print(
                f"| {fault if name == AGENTS[0] else ''} | {name} "
                f"| {outcome.heard} | {outcome.tool_results} "
                f"| {'yes' if outcome.next_works else '**no**'} "
                f"| {outcome.seconds:.2f} |"
            )
