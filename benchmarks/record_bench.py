"""The conversation record: its cost to a turn, search speed, size, concurrency.

Runs a real Home Assistant in this process with two agents on the scripted
llama-server stand-in, one keeping a record and one not, and prints:

1. Recording overhead: the same tool turn (a tool call, then a 20-token
   answer) asked of both agents in alternation; the turn's wall time with
   recording on and off, and the event-loop time of the record's hooks
   (beginning and ending a turn's recording). The database work runs on the
   store's thread, after the turn.
2. Search: a synthetic record of `--conversations` conversations (10
   entries each: 4 questions, 4 answers, 2 tool calls; words drawn from a
   Zipf distribution over 20,000 words) written through the record's own
   append; then `--queries` searches each way: `recall_conversations` (the
   tool, snippets included) and `desktop_assistant/conversations/list` with a
   query, through HA's websocket API as the panel calls it. Queries are one
   or two words of middle frequency (ranks 200-5,000, the words a question
   names: "ravioli"), and rows of frequent words (ranks 20-100) show the
   worst case: one word, and twelve (the most a search takes; the tool's
   all-words search then finds nothing and it searches for any word). Also
   the database size per 1,000 conversations.
3. 8 satellites at once: 8 conversations on 8 devices, `--turns` turns each,
   all running concurrently; then every entry is checked to be there, in
   order.

Run: scripts/bench record_bench [--runs 200] [--conversations 100000]
     [--queries 200] [--turns 50]; CI runs it small.
"""

import argparse
import asyncio
from collections.abc import Callable
import itertools
from pathlib import Path
import random
import time
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.const import (
    CONF_LLM_HASS_API,
    CONF_MODEL,
    EVENT_HOMEASSISTANT_START,
)
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import device_registry as dr, llm
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_RECORD,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from custom_components.desktop_assistant.record import (
    RECALL_TOOL,
    RecallConversationsTool,
    Record,
    database,
)
from custom_components.desktop_assistant.record.conversation_record import TurnRecording
from custom_components.desktop_assistant.record.models import (
    ConversationStart,
    Entry,
    TurnWrite,
)
from custom_components.desktop_assistant.runtime import DATA_RECORD
from custom_components.desktop_assistant.store import transaction
from tests.harness.agent_entry import async_add_agent, async_ask, register_tools
from tests.harness.benchmark import command_line, median_p95_ms
from tests.harness.home_assistant import running_home_assistant
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    serve,
    text_reply,
    tool_call_reply,
)

VOCABULARY = 20_000
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
BATCH = 1_000
SATELLITES = 8
LLM_CONTEXT = llm.LLMContext(
    platform="bench", context=None, language="en", assistant=None, device_id=None
)


def tool_turn() -> list[Any]:
    """A tool call, then a 20-token answer."""
    return [
        tool_call_reply(("weather", '{"place": "Rome", "when": "tomorrow"}')),
        text_reply(*[f"word{n} " for n in range(20)]),
    ]


class HookTimer:
    """Adds up the event-loop time of the record's hooks of each turn."""

    def __init__(self) -> None:
        self.spent = 0.0
        begin = Record.async_begin_turn
        end = TurnRecording.async_end

        def timed(function: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return function(*args, **kwargs)
                finally:
                    self.spent += time.perf_counter() - start

            return wrapper

        Record.async_begin_turn = timed(begin)  # type: ignore[method-assign]
        TurnRecording.async_end = timed(end)  # type: ignore[method-assign]

    def take(self) -> float:
        """The time spent since the last take."""
        spent, self.spent = self.spent, 0.0
        return spent


async def overhead(
    hass: HomeAssistant, server: LlamaServerStandIn, runs: int
) -> list[tuple[str, float, float]]:
    """Turn times with recording on and off, alternating, and the hooks' time.

    Wall time is what the person waits for (on a busy machine, noisy); the
    loop's CPU time (`time.thread_time` of the event loop's thread, over the
    turn and the record's writes after it) is what recording costs the event
    loop, whatever else the machine runs. The database's own thread is not in it.
    """
    api_id = register_tools(
        hass, {"weather": "Rome: clear sky, 18 °C, light wind from the west"}
    )
    options = DEFAULT_AGENT_OPTIONS | {
        CONF_MODEL: MODEL_ID,
        CONF_LLM_HASS_API: [api_id],
    }
    _, recording = await async_add_agent(hass, server.url, options)
    _, silent = await async_add_agent(hass, server.url, options | {CONF_RECORD: False})
    timer = HookTimer()
    wall: dict[str, list[float]] = {recording: [], silent: []}
    loop_cpu: dict[str, list[float]] = {recording: [], silent: []}
    hooks: list[float] = []
    for run in range(runs + 5):
        for agent_id in (recording, silent) if run % 2 else (silent, recording):
            server.script = tool_turn()
            cpu = time.thread_time()
            start = time.perf_counter()
            await async_ask(hass, agent_id, f"Weather in Rome tomorrow? ({run})")
            elapsed = time.perf_counter() - start
            spent = timer.take()
            # The record's writes happen here, after the turn.
            await hass.async_block_till_done()
            cpu = time.thread_time() - cpu
            if run >= 5:  # the first turns warm caches up
                wall[agent_id].append(elapsed)
                loop_cpu[agent_id].append(cpu)
                if agent_id == recording:
                    hooks.append(spent)
    rows = []
    for label, values in (("wall time", wall), ("loop CPU time", loop_cpu)):
        off, on = median_p95_ms(values[silent]), median_p95_ms(values[recording])
        rows += [
            (f"{label}, recording off", *off),
            (f"{label}, recording on", *on),
            (f"{label}, added (on - off)", on[0] - off[0], on[1] - off[1]),
        ]
    return [*rows, ("record hooks on the loop", *median_p95_ms(hooks))]


class Words:
    """Synthetic words with Zipf-distributed frequencies, ranks from 1."""

    def __init__(self, rng: random.Random) -> None:
        seen: dict[str, None] = {}
        while len(seen) < VOCABULARY:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
            seen.setdefault(word)
        self.words = list(seen)
        weights = [1 / rank**1.07 for rank in range(1, VOCABULARY + 1)]
        self.cumulative = list(itertools.accumulate(weights))
        self.rng = rng

    def text(self, count: int) -> str:
        """A sentence of `count` words."""
        picks = self.rng.choices(self.words, cum_weights=self.cumulative, k=count)
        return " ".join(picks).capitalize() + "."

    def ranked(self, low: int, high: int) -> str:
        """A word whose frequency rank is between `low` and `high`."""
        return self.words[self.rng.randint(low, high) - 1]


def synthetic_turn(n: int, count: int, words: Words, now: float) -> TurnWrite:
    """Conversation `n` of `count`: 10 entries; they span the last 90 days in order."""
    rng = words.rng
    at = now - 90 * 86400 * (1 - (n + rng.random()) / count)
    voice = rng.random() < 0.7
    start = ConversationStart(
        conversation_id=f"synthetic-{n}",
        agent_id="conversation.bench",
        config_entry_id=None,
        channel="voice" if voice else "text",
        device_id=f"device-{n % 6}" if voice else None,
        device_name=f"Room {n % 6}" if voice else None,
        language="en",
    )
    entries = []
    for turn in range(4):
        t = at + 20 * turn
        entries.append(
            Entry(
                kind="user",
                at=t,
                text=words.text(rng.randint(5, 14)),
                source="speech" if voice else "text",
            )
        )
        if turn in (0, 2):
            entries.append(
                Entry(
                    kind="tool_call",
                    at=t + 1,
                    tool_name="desktop_assistant__weather",
                    tool_arguments={"place": words.ranked(100, VOCABULARY)},
                    tool_result=words.text(25),
                    tool_error=False,
                )
            )
        entries.append(
            Entry(kind="assistant", at=t + 2, text=words.text(rng.randint(8, 30)))
        )
    return TurnWrite(start, at + 80, entries)


async def fill(record: Record, count: int, words: Words) -> tuple[int, float]:
    """Write `count` synthetic conversations through the record's append.

    They are made and written in batches on the store's thread; return the
    number of entries and the seconds it took.
    """
    now = time.time()
    entries = 0
    start = time.perf_counter()
    for offset in range(0, count, BATCH):

        def write_batch(connection: Any, offset: int = offset) -> int:
            written = 0
            with transaction(connection):
                for n in range(offset, min(count, offset + BATCH)):
                    write = synthetic_turn(n, count, words, now)
                    database.append(connection, write)
                    written += len(write.entries)
            return written

        entries += await record.async_read(write_batch)
    await record.async_read(lambda db: db.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    return entries, time.perf_counter() - start


def file_size(db: Path) -> int:
    """Bytes of the database file and its write-ahead log."""
    return sum(
        path.stat().st_size
        for path in (db, db.with_name(f"{db.name}-wal"))
        if path.exists()
    )


async def admin_websocket(
    hass: HomeAssistant, session: aiohttp.ClientSession
) -> aiohttp.ClientWebSocketResponse:
    """A websocket to HA's API, authenticated as an administrator."""
    user = await hass.auth.async_create_user("bench", group_ids=["system-admin"])
    refresh = await hass.auth.async_create_refresh_token(user, "https://bench.example/")
    token = hass.auth.async_create_access_token(refresh)
    # Home Assistant starts serving HTTP once it has started.
    hass.bus.async_fire(EVENT_HOMEASSISTANT_START)
    await hass.async_block_till_done()
    socket = await session.ws_connect(
        f"http://127.0.0.1:{hass.http.server_port}/api/websocket"
    )
    await socket.receive_json()  # auth_required
    await socket.send_json({"type": "auth", "access_token": token})
    assert (await socket.receive_json())["type"] == "auth_ok"
    return socket


async def search(
    hass: HomeAssistant, record: Record, conversations: int, queries: int
) -> tuple[list[tuple[str, float, float, float]], float, float]:
    """Search timings per kind of query, the size per 1,000, the fill time."""
    words = Words(random.Random(7))
    entries, fill_time = await fill(record, conversations, words)
    # Queries draw from the same vocabulary and ranks.
    words.rng = random.Random(11)
    size = await hass.async_add_executor_job(file_size, record.store.path)

    tool = RecallConversationsTool()
    rows = []
    async with aiohttp.ClientSession() as session:
        socket = await admin_websocket(hass, session)
        message_id = 0
        for label, low, high, count in (
            ("1 word, ranks 200-5000", 200, 5000, 1),
            ("2 words, ranks 200-5000", 200, 5000, 2),
            ("1 frequent word, ranks 20-100", 20, 100, 1),
            ("12 frequent words, ranks 20-100", 20, 100, 12),
        ):
            recall_times: list[float] = []
            list_times: list[float] = []
            found = 0
            for _ in range(queries):
                query = " ".join(words.ranked(low, high) for _ in range(count))
                start = time.perf_counter()
                result = await tool.async_call(
                    hass, llm.ToolInput(RECALL_TOOL, {"query": query}), LLM_CONTEXT
                )
                recall_times.append(time.perf_counter() - start)
                found += bool(result.data.get("conversations"))
                message_id += 1
                start = time.perf_counter()
                await socket.send_json(
                    {
                        "id": message_id,
                        "type": f"{DOMAIN}/conversations/list",
                        "query": query,
                        "limit": 20,
                    }
                )
                reply = await socket.receive_json()
                list_times.append(time.perf_counter() - start)
                assert reply["success"], reply
            share = found / queries
            recall, listing = median_p95_ms(recall_times), median_p95_ms(list_times)
            rows.append((f"recall_conversations, {label}", *recall, share))
            rows.append((f"conversations/list, {label}", *listing, share))
        await socket.close()
    print(
        f"Synthetic record: {conversations:,} conversations, {entries:,} entries,"
        f" written in {fill_time:.1f} s"
    )
    return rows, size / conversations * 1000, fill_time


# Long: the satellites' devices, their turns at once and the check of
# what the record kept are one measurement.
async def satellites(
    hass: HomeAssistant, server: LlamaServerStandIn, record: Record, turns: int
) -> tuple[int, int, int, float]:
    """8 conversations at once; return expected and found entries, out of order, time."""
    options = DEFAULT_AGENT_OPTIONS | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: []}
    _, agent_id = await async_add_agent(hass, server.url, options)
    devices = dr.async_get(hass)
    satellite_entry = MockConfigEntry(domain="esphome")
    satellite_entry.add_to_hass(hass)
    device_ids = [
        devices.async_get_or_create(
            config_entry_id=satellite_entry.entry_id,
            identifiers={("esphome", f"satellite-{n}")},
            name=f"Satellite {n}",
        ).id
        for n in range(SATELLITES)
    ]
    server.script = [
        text_reply("Done ", "and done.") for _ in range(SATELLITES * turns)
    ]

    async def talk(n: int) -> str:
        conversation_id = f"satellite-{n}-talk"
        for turn in range(turns):
            await conversation.async_converse(
                hass,
                f"Satellite {n} question {turn}",
                conversation_id,
                Context(),
                "en",
                agent_id,
                device_id=device_ids[n],
            )
        return conversation_id

    start = time.perf_counter()
    ids = await asyncio.gather(*(talk(n) for n in range(SATELLITES)))
    await hass.async_block_till_done()
    elapsed = time.perf_counter() - start
    found = out_of_order = 0
    for n, conversation_id in enumerate(ids):
        stored = await record.async_read(
            lambda db, c=conversation_id: database.get_conversation(db, c)
        )
        entries = stored["entries"] if stored else []
        found += len(entries)
        expected = [
            item
            for turn in range(turns)
            for item in (
                ("user", f"Satellite {n} question {turn}"),
                ("assistant", "Done and done."),
            )
        ]
        actual = [(e["kind"], e.get("text")) for e in entries]
        out_of_order += sum(a != b for a, b in zip(actual, expected, strict=False))
        assert stored is None or stored["device_id"] == device_ids[n]
    return SATELLITES * turns * 2, found, out_of_order, elapsed


async def main(args: argparse.Namespace) -> None:
    """Run the three measurements and print their tables."""
    async with (
        running_home_assistant() as hass,
        serve(LlamaServerStandIn()) as server,
    ):
        overhead_rows = await overhead(hass, server, args.runs)
        record = hass.data[DATA_RECORD]
        sent, found, out_of_order, elapsed = await satellites(
            hass, server, record, args.turns
        )
        # Search on a record of only the synthetic conversations.
        await record.async_delete_older_than(-1)
        search_rows, per_thousand, _ = await search(
            hass, record, args.conversations, args.queries
        )

    print(f"\nRecording overhead per turn, {args.runs} turns each way (ms)")
    print(f"{'':<36} {'median':>8} {'p95':>8}")
    for name, median, p95 in overhead_rows:
        print(f"{name:<36} {median:>8.3f} {p95:>8.3f}")

    print(f"\nSearch, {args.queries} queries each (ms)")
    print(f"{'query':<54} {'median':>8} {'p95':>8} {'found':>6}")
    for name, median, p95, hit in search_rows:
        print(f"{name:<54} {median:>8.2f} {p95:>8.2f} {hit:>6.0%}")
    print(f"\nDatabase size per 1,000 conversations: {per_thousand / 1e6:.2f} MB")

    print(f"\n{SATELLITES} satellites at once, {args.turns} turns each")
    print(
        f"{'entries expected':<20} {'recorded':>9} {'out of order':>13} {'time (s)':>9}"
    )
    print(f"{sent:<20} {found:>9} {out_of_order:>13} {elapsed:>9.2f}")
    if found != sent or out_of_order:
        raise SystemExit("entries were lost or out of order")


if __name__ == "__main__":
    parser = command_line(__doc__, runs=200)
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--turns", type=int, default=50)
    asyncio.run(main(parser.parse_args()))
