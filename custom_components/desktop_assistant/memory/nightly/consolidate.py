"""Consolidation: a tidy-up plan over what changed since the last one.

`async_consolidate` asks for a plan, checks it against memory as it is when
applying (`plan.py`) and applies it in one transaction (`consolidation.py`);
a refused plan gets one second chance with the refusals.
"""

import json
import sqlite3
from typing import Any, Final

from ...server.generate import Generator
from ..memory import Memory
from ..page_reads import page_names
from ..revisions import latest_revision
from . import runs
from .consolidation import (
    PLAN_CHARS,
    apply_plan,
    memory_state,
    pages_to_consolidate,
    shown_pages,
)
from .plan import PLAN_SCHEMA, MemoryState, Plan, check_plan, parse_plan, refusal_text
from .prompts import MAX_PLAN_NAMES, plan_messages
from .summary import Run

# Pages shown to the consolidation call: the profile and those changed most
# recently since the last tidy-up.
MAX_PLAN_PAGES: Final = 20
STATE_CONSOLIDATED: Final = "consolidated_revision"


async def async_consolidate(memory: Memory, generator: Generator, run: Run) -> None:
    """Ask for a plan over what changed; apply it when the checks accept it."""
    budget = memory.profile_budget

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

    if (taken := await memory.async_read(snapshot)) is None:
        return
    planned, shown, names = taken
    messages = plan_messages(shown, names, budget, PLAN_CHARS)
    for attempt in range(2):
        generation = await generator.async_generate(
            messages, structure=PLAN_SCHEMA, name="plan", max_tokens=4096
        )
        plan = parse_plan(generation.data)
        refusals = await _async_apply(memory, plan, planned, run.run_id)
        if not refusals:
            run.summary.count_applied(plan, attempt)
            return
        run.detail["refusals"] = [refusal.message for refusal in refusals]
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
    memory: Memory, plan: Plan, planned: MemoryState, run_id: int
) -> list[Any]:
    """Check the plan against memory now and apply it, in one transaction.

    Raises PageError when applying fails: nothing of the plan is kept.
    """
    budget = memory.profile_budget

    def work(connection: sqlite3.Connection, now: float) -> list[Any]:
        current = memory_state(connection, budget)
        if refusals := check_plan(plan, planned, current):
            return refusals
        apply_plan(connection, plan, planned, now, run_id)
        runs.set_state(connection, STATE_CONSOLIDATED, str(latest_revision(connection)))
        return []

    return await memory.async_write(work)
