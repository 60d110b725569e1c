"""The nightly pass: notes from quiet conversations, then a checked tidy-up plan.

It runs at a time of day (an entry option), on `desktop_assistant.run_nightly`,
and once soon after start when HA was down at the scheduled time. It talks to
llama-server through `generate.Generator`, stepping aside for conversations.
Every run ends `ok`, `no_server`, `cancelled` or `failed: <reason>`; the jobs
registry records it, and ends a run left `running` at the next start (a kill)
or by the next run (a store fault).
"""

import asyncio
from dataclasses import asdict, dataclass, field
import json
import logging
import sqlite3
from typing import Any, Final

import aiohttp
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util

from ...clock import monotonic_seconds
from ...const import DOMAIN, PANEL_URL_PATH, SUBENTRY_AI_TASK
from ...record import database
from ...runtime import DATA_RECORD
from ...server.activity import async_get_activity
from ...server.background import async_server_for_background
from ...server.client import LlamaServerClient
from ...server.generate import GenerationError, Generator
from ...server.reported import server_props
from ...store import StoreError
from ..errors import PageError
from ..household import Memory
from ..page import page_names
from ..revisions import latest_revision
from . import extraction, runs
from .consolidation import (
    PLAN_CHARS,
    apply_plan,
    memory_state,
    pages_to_consolidate,
    shown_pages,
)
from .plan import PLAN_SCHEMA, MemoryState, Plan, check_plan, parse_plan, refusal_text
from .prompts import (
    EXTRACT_CHARS,
    EXTRACT_PARTS,
    MAX_PLAN_NAMES,
    NOTES_SCHEMA,
    extraction_messages,
    plan_messages,
)
from .queue import async_queue_unread

_LOGGER = logging.getLogger(__name__)

MAX_CONVERSATIONS: Final = 30
# Pages shown to the consolidation call: the profile and those changed most
# recently since the last tidy-up.
MAX_PLAN_PAGES: Final = 20
STATE_CONSOLIDATED = "consolidated_revision"
STATE_FAILED_RUNS = "failed_runs"
# After this many failed runs in a row, a Repairs issue says so.
FAILED_RUNS_ISSUE: Final = 3
ISSUE_FAILING: Final = "nightly_failing"


@dataclass(slots=True)
class RunSummary:
    """What a run did, as the panel summarises it."""

    conversations: int = 0
    trivial: int = 0
    notes: int = 0
    failed: int = 0
    given_up: int = 0
    rewritten: int = 0
    created: int = 0
    merged: int = 0
    dropped: int = 0
    consolidation: str = "not_needed"
    refusals: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The summary as the run answers it (the registry keeps it without refusals)."""
        return asdict(self)


@dataclass(slots=True)
class Run:
    """One run in progress: its row, its summary and what it keeps for the panel."""

    run_id: int
    summary: RunSummary = field(default_factory=RunSummary)
    detail: dict[str, Any] = field(default_factory=dict)
    # Whether any model call of the run succeeded.
    answered: bool = False


class NightlyPass:
    """Runs the pass, one at a time."""

    def __init__(self, hass: HomeAssistant, memory: Memory) -> None:
        """Prepare; `schedule.NightlySchedule` runs it at its time."""
        self.hass = hass
        self.memory = memory
        self._lock = asyncio.Lock()
        # The row of the run in progress, which a skipped run never pushes out.
        self._running: int | None = None

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        return self._lock.locked()

    async def async_run(self, job_run: int | None) -> dict[str, Any]:
        """Run the pass now; a run while another runs is recorded as skipped.

        `job_run` is the jobs registry's id of the run, which keeps its
        trigger, times, outcome and summary (`job.NightlyJob` runs it so).
        """
        if self._lock.locked():
            running = self._running
            run_id = await self.memory.async_write(
                lambda db, now: runs.record_skipped(db, job_run, running)
            )
            return {
                "run_id": run_id,
                "outcome": "skipped",
                "summary": dict(runs.SKIPPED_SUMMARY),
            }
        async with self._lock:
            try:
                return await self._async_run_locked(job_run)
            finally:
                self._running = None

    async def _async_run_locked(self, job_run: int | None) -> dict[str, Any]:
        started = monotonic_seconds()
        run = Run(
            await self.memory.async_write(lambda db, now: runs.insert_run(db, job_run))
        )
        self._running = run.run_id
        try:
            outcome = await self._async_pass(run)
        except asyncio.CancelledError:
            # HA is stopping: the run's row says so before the task ends.
            await asyncio.shield(self._async_finish(run, "cancelled", started))
            raise
        outcome = await self._async_finish(run, outcome, started)
        return {
            "run_id": run.run_id,
            "outcome": outcome,
            "summary": run.summary.as_dict(),
        }

    async def _async_pass(self, run: Run) -> str:
        """Extract, then consolidate; return the outcome."""
        try:
            generator = await self.async_get_generator()
            if generator is None:
                return "no_server"
            failure = await self._async_extract(generator, run)
            if failure is None:
                await self._async_consolidate(generator, run)
        except GenerationError as err:
            run.detail["error"] = str(err)
            _LOGGER.warning("The nightly pass stopped: %s", err)
            return f"failed: {err.kind}"
        except StoreError as err:
            return f"failed: database {err.kind}"
        except PageError as err:
            run.detail["error"] = str(err)
            _LOGGER.warning("The nightly pass could not apply its plan: %s", err)
            return f"failed: plan not applied ({err.code})"
        except Exception as err:  # a bug must not leave the run running
            _LOGGER.exception("The nightly pass failed")
            run.detail["error"] = repr(err)
            return f"failed: {type(err).__name__}"
        return failure or "ok"

    async def _async_finish(self, run: Run, outcome: str, started: float) -> str:
        """Write the run's detail; answer its outcome, a database fault if refused."""
        duration = monotonic_seconds() - started
        # The refusals quote pages: memory keeps them, where Delete forever scrubs.
        detail = run.detail | {"refusals": run.summary.refusals}

        def work(connection: sqlite3.Connection, now: float) -> int:
            runs.finish_run(connection, run.run_id, detail=detail)
            failed = int(runs.get_state(connection, STATE_FAILED_RUNS) or 0)
            failed = failed + 1 if outcome.startswith("failed") else 0
            runs.set_state(connection, STATE_FAILED_RUNS, str(failed))
            return failed

        try:
            self._report_failing(await self.memory.async_write(work), outcome)
        except StoreError as err:  # reported by the store already
            outcome = f"failed: database {err.kind}"
        _LOGGER.info(
            "Nightly pass %s in %.1f s: %s", outcome, duration, run.summary.as_dict()
        )
        return outcome

    def _report_failing(self, failed_runs: int, outcome: str) -> None:
        """Raise a Repairs issue when runs keep failing; clear it when one works."""
        if failed_runs < FAILED_RUNS_ISSUE:
            if not failed_runs:
                ir.async_delete_issue(self.hass, DOMAIN, ISSUE_FAILING)
            return
        ir.async_create_issue(
            self.hass,
            DOMAIN,
            ISSUE_FAILING,
            # The panel's Nightly page lists the runs and why each failed.
            learn_more_url=f"/{PANEL_URL_PATH}/nightly",
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key=ISSUE_FAILING,
            translation_placeholders={
                "runs": str(failed_runs),
                "outcome": outcome.removeprefix("failed: "),
            },
        )

    async def async_get_generator(self) -> Generator | None:
        """The one place the pass chooses its server and model.

        The first loaded server entry; its AI task's model, else its agent's.
        """
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
            return server_props(props).total_slots or 1
        except (TimeoutError, aiohttp.ClientError, ValueError, AttributeError) as err:
            _LOGGER.debug("Could not read the server's slots: %r", err)
            return 1

    async def _async_transcripts(self) -> list[extraction.Transcript]:
        """The queued quiet conversations with entries not read yet, oldest first.

        Read through the record's own functions; a conversation the record no
        longer holds leaves the queue.
        """
        record = self.hass.data[DATA_RECORD]
        await async_queue_unread(record, self.memory)
        queue = await self.memory.async_read(
            lambda connection: extraction.queued(connection, MAX_CONVERSATIONS * 4)
        )
        found: list[extraction.Transcript] = []
        for conversation_id, failures in queue:
            conversation = await record.async_read(
                lambda connection, cid=conversation_id: database.get_conversation(
                    connection, cid
                )
            )
            if conversation is None or conversation["status"] != "quiet":
                if conversation is None:
                    await self.memory.async_write(
                        lambda connection, now, cid=conversation_id: extraction.dequeue(
                            connection, cid
                        )
                    )
                continue
            mark = await self.memory.async_read(
                lambda connection, c=conversation: extraction.read_mark(connection, c)
            )
            transcript = extraction.transcript_of(conversation, mark, failures)
            if transcript.last_entry == mark:
                await self._async_mark_read(transcript)
                continue
            found.append(transcript)
            if len(found) == MAX_CONVERSATIONS:
                break
        return found

    async def _async_mark_read(self, transcript: extraction.Transcript) -> None:
        await self.memory.async_write(
            lambda connection, now: extraction.mark_extracted(
                connection, transcript, now
            )
        )

    async def _async_extract(self, generator: Generator, run: Run) -> str | None:
        """Note lasting facts of quiet conversations; return a failure, if all failed.

        A conversation that fails goes behind the others and is given up
        after `MAX_FAILURES` runs; it never blocks the ones after it.
        """
        failed: list[tuple[extraction.Transcript, GenerationError]] = []
        for transcript in await self._async_transcripts():
            run.summary.conversations += 1
            try:
                await self._async_extract_one(generator, run, transcript)
            except GenerationError as err:
                _LOGGER.debug("Extraction of %s failed: %s", transcript, err)
                run.summary.failed += 1
                failed.append((transcript, err))
                await self.memory.async_write(
                    lambda connection, now, t=transcript: extraction.count_failure(
                        connection, t.conversation_id
                    )
                )
                continue
            await self._async_mark_read(transcript)
        for transcript, err in failed:
            # An answer the model cannot give is the conversation's fault; a
            # server that answered nothing all night is not.
            blamed = run.answered or err.kind == "invalid_output"
            if blamed and transcript.failures + 1 >= extraction.MAX_FAILURES:
                run.summary.given_up += 1
                await self._async_mark_read(transcript)
        if failed and not run.answered:
            run.detail["error"] = str(failed[0][1])
            return f"failed: {failed[0][1].kind}"
        return None

    async def _async_extract_one(
        self, generator: Generator, run: Run, transcript: extraction.Transcript
    ) -> None:
        if transcript.trivial:
            run.summary.trivial += 1
            return
        day = dt_util.as_local(transcript.last_activity_at).date().isoformat()
        for part in extraction.transcript_parts(
            transcript.lines, EXTRACT_CHARS, EXTRACT_PARTS
        ):
            names = await self.memory.async_read(
                lambda connection: page_names(connection, MAX_PLAN_NAMES)
            )
            generation = await generator.async_generate(
                extraction_messages(part, transcript.device_name, names),
                structure=NOTES_SCHEMA,
                name="notes",
                max_tokens=512,
            )
            run.answered = True
            for note in generation.data["notes"]:
                if extraction.is_device_name(note["page"], transcript.device_name):
                    _LOGGER.debug("Skipping a note about the device name")
                    continue
                await self._async_note(note, day, transcript, run)

    async def _async_note(
        self,
        note: dict[str, str],
        day: str,
        transcript: extraction.Transcript,
        run: Run,
    ) -> None:
        """Write a note and, in the same transaction, the run's record of it."""

        def work(connection: sqlite3.Connection, now: float) -> bool:
            page, added, before = extraction.note_on_owners_page(
                connection, note, day, now, transcript
            )
            if added:
                runs.record_note(
                    connection, run.run_id, page.id, before, transcript.conversation_id
                )
            return added

        try:
            if await self.memory.async_write(work):
                run.summary.notes += 1
        except PageError as err:
            _LOGGER.debug("Extraction note not kept: %s", err)

    async def _async_consolidate(self, generator: Generator, run: Run) -> None:
        """Ask for a plan over what changed; apply it when the checks accept it."""
        budget = self.memory.profile_budget

        def snapshot(connection: sqlite3.Connection) -> Any:
            since = int(runs.get_state(connection, STATE_CONSOLIDATED) or 0)
            if latest_revision(connection) <= since:
                return None
            shown = shown_pages(
                pages_to_consolidate(connection, since, MAX_PLAN_PAGES), PLAN_CHARS
            )
            return (
                memory_state(connection, budget, shown),
                shown,
                page_names(connection, MAX_PLAN_NAMES),
            )

        taken = await self.memory.async_read(snapshot)
        if taken is None:
            return
        planned, shown, names = taken
        messages = plan_messages(shown, names, budget, PLAN_CHARS)
        for attempt in range(2):
            generation = await generator.async_generate(
                messages, structure=PLAN_SCHEMA, name="plan", max_tokens=4096
            )
            plan = parse_plan(generation.data)
            refusals = await self._async_apply(plan, planned, run.run_id)
            if not refusals:
                _count_applied(run.summary, plan, attempt)
                return
            run.summary.refusals = [refusal.message for refusal in refusals]
            run.detail.setdefault("refused_plans", []).append(generation.data)
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
        run.summary.consolidation = "refused"

    async def _async_apply(
        self, plan: Plan, planned: MemoryState, run_id: int
    ) -> list[Any]:
        """Check the plan against memory now and apply it, in one transaction.

        Raises PageError when applying fails: nothing of the plan is kept.
        """
        budget = self.memory.profile_budget

        def work(connection: sqlite3.Connection, now: float) -> list[Any]:
            current = memory_state(connection, budget)
            if refusals := check_plan(plan, planned, current):
                return refusals
            apply_plan(connection, plan, planned, now, run_id)
            runs.set_state(
                connection, STATE_CONSOLIDATED, str(latest_revision(connection))
            )
            return []

        return await self.memory.async_write(work)

    async def async_revert(self, run_id: int, page_id: int) -> dict[str, Any]:
        """Undo one run's change to one page."""
        return await self.memory.async_write(
            lambda connection, now: runs.revert_page(connection, run_id, page_id, now)
        )


def _count_applied(summary: RunSummary, plan: Plan, attempt: int) -> None:
    summary.consolidation = "applied" if attempt == 0 else "applied_second"
    summary.rewritten = len(plan.rewrites)
    summary.created = len(plan.creates)
    summary.merged = len(plan.merges)
    summary.dropped = sum(
        len(action.dropped) for action in (*plan.rewrites, *plan.merges)
    )
