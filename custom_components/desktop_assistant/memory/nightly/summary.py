"""One nightly run in progress: its id, its counts and what it keeps for the panel."""

from dataclasses import asdict, dataclass, field
from typing import Any

from .plan import Plan


@dataclass(slots=True)
class RunSummary:
    """What a run did, as the panel summarises it (the registry keeps it)."""

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

    def as_dict(self) -> dict[str, Any]:
        """The counts, as the registry keeps them."""
        return asdict(self)

    def count_applied(self, plan: Plan, attempt: int) -> None:
        """Count what an applied plan changed; `attempt` 1 is the second chance."""
        self.consolidation = "applied" if attempt == 0 else "applied_second"
        self.rewritten = len(plan.rewrites)
        self.created = len(plan.creates)
        self.merged = len(plan.merges)
        self.dropped = sum(
            len(action.dropped) for action in (*plan.rewrites, *plan.merges)
        )


@dataclass(slots=True)
class Run:
    """One run in progress, under the registry's id of it."""

    run_id: int
    summary: RunSummary = field(default_factory=RunSummary)
    # What memory keeps of the run besides its changes: the error, the
    # refused plans and their refusals (they quote pages; Delete forever
    # scrubs them here, and the registry never sees them).
    detail: dict[str, Any] = field(default_factory=dict)
    # Whether any model call of the run succeeded.
    answered: bool = False
