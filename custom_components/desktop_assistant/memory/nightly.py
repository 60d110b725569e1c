"""The nightly pass: notes from quiet conversations, then a checked tidy-up plan.

It runs at a time of day (an entry option), on `desktop_assistant.run_nightly`,
and once soon after start when HA was down at the scheduled time. It talks to
llama-server through `generate.Generator`, stepping aside for conversations.
"""

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, time as dt_time, timedelta
import json
import logging
import sqlite3
import time
from typing import Any, Final

import aiohttp
from homeassistant.config_entries import ConfigEntry, ConfigEntryState
from homeassistant.const import CONF_MODEL
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later, async_track_time_change
from homeassistant.util import dt as dt_util
import probatio as vol

from ..const import (
    CHARS_PER_TOKEN,
    CONF_NIGHTLY,
    CONF_NIGHTLY_TIME,
    DEFAULT_NIGHTLY_TIME,
    DOMAIN,
    SUBENTRY_AI_TASK,
)
from ..server.activity import async_get_activity
from ..server.background import async_server_for_background
from ..server.client import LlamaServerClient
from ..server.generate import GenerationError, Generator
from ..store import StoreError
from ..text import fold_name
from . import pages, runs
from .memory import Memory
from .pages import MemoryError
from .plan import (
    PLAN_SCHEMA,
    MemoryState,
    Plan,
    Refusal,
    check_plan,
    parse_plan,
    refusal_text,
)

_LOGGER = logging.getLogger(__name__)

MAX_CONVERSATIONS: Final = 30
# Pages shown to the consolidation call: the profile and those changed most
# recently since the last tidy-up.
MAX_PLAN_PAGES: Final = 20
# Names of other pages listed for the model, so it can link and avoid clashes.
MAX_PLAN_NAMES: Final = 200
# The consolidation request's pages and names, in characters (about a
# quarter as many tokens), so that it fits a 4096-token context.
PLAN_CHARS: Final = 9000
CATCH_UP_DELAY: Final = 120.0
STATE_CONSOLIDATED = "consolidated_revision"
STATE_FIRST_SEEN = "first_seen"

NOTES_SCHEMA = vol.Schema(
    {
        vol.Required("notes"): [
            vol.Schema(
                {
                    vol.Required("page"): str,
                    vol.Required("type"): vol.In(list(pages.PAGE_KINDS)),
                    vol.Required("fact"): str,
                }
            )
        ]
    }
)

EXTRACT_PROMPT: Final = """\
You keep the long-term memory of a household's voice assistant. Read a \
conversation and return the lasting facts in it, as JSON: {"notes": [{"page", \
"type", "fact"}]}.

Note only facts the person stated or confirmed, about their household's world, \
that will still be true in a month: birthdays, relationships, where someone \
lives or works, preferences, plans. "No notes" ({"notes": []}) is the normal \
answer. Skip what is true only inside the conversation, what can be looked up \
live (weather, news, times), moods, and what only the assistant said. Tool \
calls show what was looked up; they are not facts about the household.

`page` is who or what the fact is about: a person's name, a place, a \
project, a thing. Facts about the person speaking or the household as a whole \
go on the page `profile`. Use an existing page name when one fits. The name of \
the device the person spoke to is a room or a device, never a person. \
`fact` is one short sentence in the conversation's language.
"""

PLAN_PROMPT: Final = """\
You keep the long-term memory of a household's voice assistant tidy. Below are \
pages of memory, each with its dated notes under "## Notes". Return a plan as \
JSON: {"rewrite": [...], "create": [...], "merge": [...]}; empty lists change \
nothing.

- rewrite {"page", "text", "dropped"}: new text for a page that folds its notes \
into plain sentences, removes duplicates, keeps the newer fact when two \
contradict, and adds [[links]] to other pages.
- create {"page", "type", "text"}: a new page, for example to move detail off \
an over-budget profile.
- merge {"into", "absorb", "text", "dropped"}: two pages about the same thing; \
`absorb` is deleted and its names become aliases of `into`.

Every line you remove on purpose (a superseded fact, a duplicate) must be \
listed in `dropped` with its `reason`. Keep every other fact. Never empty a \
page, never rename or merge the profile, never use a name that is taken. The \
profile should stay under {budget} tokens (about {chars} characters).
"""


@dataclass(slots=True)
class RunSummary:
    """What a run did, as the panel summarises it."""

    conversations: int = 0
    trivial: int = 0
    notes: int = 0
    rewritten: int = 0
    created: int = 0
    merged: int = 0
    dropped: int = 0
    refusals: list[str] = field(default_factory=list)
    consolidation: str = "not_needed"

    def as_dict(self) -> dict[str, Any]:
        """The summary as stored with the run."""
        return {
            "conversations": self.conversations,
            "trivial": self.trivial,
            "notes": self.notes,
            "rewritten": self.rewritten,
            "created": self.created,
            "merged": self.merged,
            "dropped": self.dropped,
            "consolidation": self.consolidation,
            "refusals": self.refusals,
        }


class NightlyPass:
    """Runs the pass, one at a time, and schedules it."""

    def __init__(self, hass: HomeAssistant, memory: Memory) -> None:
        """Prepare; `async_schedule` starts the timers."""
        self.hass = hass
        self.memory = memory
        self._lock = asyncio.Lock()
        self._unsubscribe: list[CALLBACK_TYPE] = []

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        return self._lock.locked()

    async def async_run(self, trigger: str) -> dict[str, Any]:
        """Run the pass now; a run while another runs is recorded as skipped."""
        if self._lock.locked():
            run_id = await self.memory.async_write(
                lambda connection, now: runs.record_skipped(connection, trigger, now)
            )
            return {"run_id": run_id, "outcome": "skipped"}
        async with self._lock:
            return await self._async_run_locked(trigger)

    async def _async_run_locked(self, trigger: str) -> dict[str, Any]:
        started = time.monotonic()
        run_id = await self.memory.async_write(
            lambda connection, now: runs.insert_run(connection, trigger, now)
        )
        summary = RunSummary()
        changes: list[runs.PageChange] = []
        detail: dict[str, Any] = {}
        outcome = "ok"
        try:
            generator = await self._async_generator()
            if generator is None:
                outcome = "no_server"
            else:
                changes += await self._async_extract(generator, run_id, summary)
                changes += await self._async_consolidate(
                    generator, run_id, summary, detail
                )
        except GenerationError as err:
            outcome = f"failed: {err.kind}"
            detail["error"] = str(err)
            _LOGGER.warning("The nightly pass stopped: %s", err)
        except StoreError as err:
            outcome = f"failed: database {err.kind}"
        duration = time.monotonic() - started
        # A store fault is already reported by the store.
        with contextlib.suppress(StoreError):
            await self.memory.async_write(
                lambda connection, now: runs.finish_run(
                    connection,
                    run_id,
                    duration=duration,
                    outcome=outcome,
                    summary=summary.as_dict(),
                    detail=detail,
                    changes=changes,
                )
            )
        _LOGGER.info(
            "Nightly pass (%s) %s in %.1f s: %s",
            trigger,
            outcome,
            duration,
            summary.as_dict(),
        )
        return {"run_id": run_id, "outcome": outcome, "summary": summary.as_dict()}

    async def _async_generator(self) -> Generator | None:
        """The model of the first loaded server entry: its AI task's, else its agent's."""
        for entry in self.hass.config_entries.async_entries(DOMAIN):
            if entry.state is not ConfigEntryState.LOADED:
                continue
            if (server := await async_server_for_background(self.hass, entry)) is None:
                continue
            client, fallback_model = server
            subentries = sorted(
                entry.subentries.values(),
                key=lambda sub: sub.subentry_type != SUBENTRY_AI_TASK,
            )
            model = fallback_model or next(
                (s.data.get(CONF_MODEL) for s in subentries if s.data.get(CONF_MODEL)),
                None,
            )
            if model is None:
                continue
            slots = await self._async_slots(client)
            return Generator(
                client,
                model,
                slot=slots - 1 if slots > 1 else None,
                yield_to=async_get_activity(self.hass),
            )
        return None

    async def _async_slots(self, client: LlamaServerClient) -> int:
        """How many slots the server has (llama-server's /props); 1 if unknown."""
        try:
            async with asyncio.timeout(5):
                async with client.session.get(
                    f"{client.url.removesuffix('/v1')}/props", headers=client.headers
                ) as response:
                    props = await response.json(content_type=None)
            return int(props.get("total_slots") or 1)
        except (TimeoutError, aiohttp.ClientError, ValueError, AttributeError) as err:
            _LOGGER.debug("Could not read the server's slots: %r", err)
            return 1

    async def _async_extract(
        self, generator: Generator, run_id: int, summary: RunSummary
    ) -> list[runs.PageChange]:
        """Note lasting facts of quiet conversations, like remember does."""
        transcripts = await self.memory.async_read(
            lambda connection: runs.pending_transcripts(connection, MAX_CONVERSATIONS)
        )
        touched: dict[int, runs.PageChange] = {}
        for transcript in transcripts:
            summary.conversations += 1
            if transcript.trivial:
                summary.trivial += 1
            else:
                names = await self.memory.async_read(_page_names)
                generation = await generator.async_generate(
                    extraction_messages(transcript, names),
                    structure=NOTES_SCHEMA,
                    name="notes",
                    max_tokens=512,
                )
                day = (
                    dt_util.as_local(
                        datetime.fromtimestamp(transcript.last_activity_at, UTC)
                    )
                    .date()
                    .isoformat()
                )
                for note in generation.data["notes"]:
                    if _is_device_name(note["page"], transcript.device_name):
                        _LOGGER.debug("Skipping a note about the device name")
                        continue
                    await self._async_note(note, day, transcript, touched, summary)
            await self.memory.async_write(
                lambda connection, now, t=transcript: runs.mark_extracted(
                    connection, t, now
                )
            )
        return list(touched.values())

    async def _async_note(
        self,
        note: dict[str, str],
        day: str,
        transcript: runs.Transcript,
        touched: dict[int, runs.PageChange],
        summary: RunSummary,
    ) -> None:
        def work(connection: sqlite3.Connection, now: float) -> tuple[Any, bool, str]:
            before = pages.find_page(connection, note["page"])
            page, added = pages.remember(
                connection,
                note["page"],
                note["fact"],
                day,
                now,
                author="extraction",
                kind=note["type"],
                source=transcript.conversation_id,
            )
            return page, added, before.text if before else None

        try:
            page, added, before_text = await self.memory.async_write(work)
        except MemoryError as err:
            _LOGGER.debug("Extraction note not kept: %s", err)
            return
        if not added:
            return
        summary.notes += 1
        change = touched.get(page.id)
        if change is None:
            change = touched[page.id] = runs.PageChange(
                page.id,
                page.name,
                "notes",
                before_text,
                page.text,
                None,
                page.revision,
            )
        change.after_text = page.text
        change.after_revision = page.revision
        if transcript.conversation_id not in change.sources:
            change.sources.append(transcript.conversation_id)

    async def _async_consolidate(
        self,
        generator: Generator,
        run_id: int,
        summary: RunSummary,
        detail: dict[str, Any],
    ) -> list[runs.PageChange]:
        """Ask for a plan over what changed; apply it when the checks accept it."""
        budget = self.memory.profile_budget

        def snapshot(connection: sqlite3.Connection) -> Any:
            since = int(runs.get_state(connection, STATE_CONSOLIDATED) or 0)
            if runs.latest_revision(connection) <= since:
                return None
            return (
                runs.memory_state(connection, budget),
                runs.pages_to_consolidate(connection, since, MAX_PLAN_PAGES),
                _page_names(connection),
            )

        taken = await self.memory.async_read(snapshot)
        if taken is None:
            return []
        planned, shown, names = taken
        messages = plan_messages(shown, names, budget)
        for attempt in range(2):
            generation = await generator.async_generate(
                messages, structure=PLAN_SCHEMA, name="plan", max_tokens=4096
            )
            plan = parse_plan(generation.data)
            refusals, changes = await self._async_apply(plan, planned, run_id)
            if not refusals:
                summary.consolidation = "applied" if attempt == 0 else "applied_second"
                summary.rewritten = len(plan.rewrites)
                summary.created = len(plan.creates)
                summary.merged = len(plan.merges)
                summary.dropped = sum(
                    len(action.dropped) for action in (*plan.rewrites, *plan.merges)
                )
                return changes
            summary.refusals = [refusal.message for refusal in refusals]
            detail.setdefault("refused_plans", []).append(generation.data)
            messages = [
                *messages,
                {"role": "assistant", "content": json.dumps(generation.data)},
                {
                    "role": "user",
                    "content": "The plan was refused:\n"
                    + refusal_text(refusals)
                    + "\nSend a corrected plan.",
                },
            ]
        summary.consolidation = "refused"
        return []

    async def _async_apply(
        self, plan: Plan, planned: MemoryState, run_id: int
    ) -> tuple[list[Refusal], list[runs.PageChange]]:
        """Check the plan against memory now and apply it, in one transaction."""
        budget = self.memory.profile_budget

        def work(
            connection: sqlite3.Connection, now: float
        ) -> tuple[list[Refusal], list[runs.PageChange]]:
            current = runs.memory_state(connection, budget)
            if refusals := check_plan(plan, planned, current):
                return refusals, []
            changes = runs.apply_plan(connection, plan, now, run_id)
            runs.set_state(
                connection, STATE_CONSOLIDATED, str(runs.latest_revision(connection))
            )
            return [], changes

        return await self.memory.async_write(work)

    async def async_revert(self, run_id: int, page_id: int) -> dict[str, Any]:
        """Undo one run's change to one page."""
        return await self.memory.async_write(
            lambda connection, now: runs.revert_page(connection, run_id, page_id, now)
        )

    @callback
    def async_schedule(self, entry: ConfigEntry | None) -> None:
        """Run daily at the entry's time of day (unless off); catch up a missed run."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        options = entry.options if entry else {}
        if not options.get(CONF_NIGHTLY, True):
            return
        at = parse_time(options.get(CONF_NIGHTLY_TIME, DEFAULT_NIGHTLY_TIME))

        async def scheduled(now: datetime) -> None:
            await self.async_run("schedule")

        self._unsubscribe.append(
            async_track_time_change(
                self.hass, scheduled, hour=at.hour, minute=at.minute, second=0
            )
        )
        self.hass.async_create_background_task(
            self._async_catch_up(at), f"{DOMAIN} nightly catch-up"
        )

    async def _async_catch_up(self, at: dt_time) -> None:
        """Run once soon after start when the last scheduled run was missed."""
        if await self.async_missed(at, dt_util.now()):

            async def catch_up(now: datetime) -> None:
                await self.async_run("catch_up")

            self._unsubscribe.append(
                async_call_later(self.hass, CATCH_UP_DELAY, catch_up)
            )

    async def async_missed(self, at: dt_time, now: datetime) -> bool:
        """Whether no run started since the last scheduled time before `now`."""
        scheduled = now.replace(hour=at.hour, minute=at.minute, second=0, microsecond=0)
        if scheduled > now:
            scheduled -= timedelta(days=1)

        def last(connection: sqlite3.Connection, stamp: float) -> float:
            if runs.get_state(connection, STATE_FIRST_SEEN) is None:
                runs.set_state(connection, STATE_FIRST_SEEN, str(stamp))
            first_seen = float(runs.get_state(connection, STATE_FIRST_SEEN) or stamp)
            row = connection.execute(
                "SELECT max(started_at) FROM nightly_runs WHERE outcome != 'skipped'"
            ).fetchone()
            return max(first_seen, row[0] or 0.0)

        last_run = await self.memory.async_write(last)
        return last_run < scheduled.timestamp()

    @callback
    def async_stop(self) -> None:
        """Cancel the timers."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []


def parse_time(value: str) -> dt_time:
    """Read a time of day ("03:00" or "03:00:00")."""
    parsed = dt_util.parse_time(value)
    if parsed is None:
        raise ValueError(f"not a time of day: {value!r}")
    return parsed


def _page_names(connection: sqlite3.Connection) -> list[str]:
    return [
        row[0]
        for row in connection.execute(
            "SELECT name FROM pages WHERE deleted_at IS NULL AND kind != 'profile' "
            "ORDER BY updated_at DESC LIMIT ?",
            (MAX_PLAN_NAMES,),
        )
    ]


def _is_device_name(page: str, device_name: str | None) -> bool:
    """Whether a note's page is the device the person spoke to."""
    if not device_name:
        return False
    return fold_name(page) in {
        fold_name(device_name),
        fold_name(device_name.split()[0]),
    }


def extraction_messages(
    transcript: runs.Transcript, names: list[str]
) -> list[dict[str, str]]:
    """The extraction request for one conversation."""
    device = (
        f"The person spoke to a device named {transcript.device_name!r}.\n"
        if transcript.device_name
        else ""
    )
    known = ", ".join(names[:MAX_PLAN_NAMES]) or "(none yet)"
    return [
        {"role": "system", "content": EXTRACT_PROMPT},
        {
            "role": "user",
            "content": f"Existing pages: {known}\n{device}\nConversation:\n"
            + "\n".join(transcript.lines),
        },
    ]


def plan_messages(
    shown: list[pages.Page], names: list[str], budget: int
) -> list[dict[str, str]]:
    """The consolidation request: the pages to tidy, the other pages' names.

    Bounded by PLAN_CHARS so that it fits a small model's context; pages
    left out are tidied on a later night.
    """
    room = PLAN_CHARS
    sections: list[str] = []
    for page in shown:
        section = (
            f"### {page.name} [{'profile' if page.is_profile else page.kind}]"
            + (f" (aliases: {', '.join(page.aliases)})" if page.aliases else "")
            + f"\n{page.text.strip()}"
        )
        if sections and len(section) > room:
            break
        sections.append(section)
        room -= len(section) + 2
    shown_names = {page.name for page in shown}
    others: list[str] = []
    for name in names:
        if name in shown_names:
            continue
        if len(name) + 2 > room:
            break
        others.append(name)
        room -= len(name) + 2
    return [
        {
            "role": "system",
            "content": PLAN_PROMPT.replace("{budget}", str(budget)).replace(
                "{chars}", str(budget * CHARS_PER_TOKEN)
            ),
        },
        {
            "role": "user",
            "content": "Pages:\n\n"
            + "\n\n".join(sections)
            + "\n\nOther pages: "
            + (", ".join(others) or "(none)"),
        },
    ]
