"""How a run ended: one vocabulary for every job, a kind and a detail.

The kind is one of `KINDS` (the panel's word for it is `outcomes.<kind>` in
its translations, and `panel/describe` sends the list); the detail says why
a run failed or was skipped, a code of the Python side the panel shows as
it is. They travel as two fields, `outcome` and `outcome_detail`, never as
one string to split.
"""

from dataclasses import dataclass
from typing import Any, Final

from ..store import StoreError

RUNNING: Final = "running"
OK: Final = "ok"
SKIPPED: Final = "skipped"
NO_SERVER: Final = "no_server"
CANCELLED: Final = "cancelled"
FAILED: Final = "failed"
KINDS: Final = (RUNNING, OK, SKIPPED, NO_SERVER, CANCELLED, FAILED)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one run ended (`running` while it runs)."""

    kind: str
    detail: str | None = None

    def __post_init__(self) -> None:
        """Refuse a kind outside the vocabulary."""
        if self.kind not in KINDS:
            raise ValueError(f"not an outcome: {self.kind!r}")

    def __str__(self) -> str:
        """The outcome as a log says it: `ok`, `failed (invalid_output)`."""
        return f"{self.kind} ({self.detail})" if self.detail else self.kind

    @property
    def failed(self) -> bool:
        """Whether the run failed."""
        return self.kind == FAILED

    def fields(self) -> dict[str, Any]:
        """The outcome as it is stored and sent."""
        return {"outcome": self.kind, "outcome_detail": self.detail}


def failed(detail: str) -> Outcome:
    """A failed run and why, as a short code (`invalid_output`, `database locked`)."""
    return Outcome(FAILED, detail)


def database_failed(err: StoreError) -> Outcome:
    """The outcome of a run the store failed."""
    return failed(f"database {err.kind}")


SUCCEEDED: Final = Outcome(OK)
INTERRUPTED: Final = failed("interrupted")
ANOTHER_RUN: Final = Outcome(SKIPPED, "another_run")
