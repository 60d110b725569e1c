"""The runs of every registered job, one row each in `job_runs`.

Functions of a connection, run on the store's thread. A run's row is
written before the job starts, so the job is told its id; the newest
KEEP_RUNS of each job are kept, and a run still `running` never makes way
for newer ones. A run whose end could not be written is ended by the next
run of any job, and a run a stop left `running` is ended at the next start
(`interrupted_runs`).
"""

from dataclasses import dataclass, field
import json
import sqlite3
import time
from typing import Any, Final

from ..store import transaction
from .outcome import FAILED, INTERRUPTED, RUNNING, SKIPPED, Outcome

KEEP_RUNS: Final = 50

# What the panel gets of a run, by column.
_RUN_FIELDS: Final = (
    "id",
    "trigger",
    "started_at",
    "duration",
    "outcome",
    "outcome_detail",
    "summary",
)
_COLUMNS: Final = ", ".join(_RUN_FIELDS)


@dataclass(slots=True)
class RunEnd:
    """How a run ended: its seconds, its outcome and the summary it answered."""

    duration: float
    outcome: Outcome
    summary: dict[str, Any] = field(default_factory=dict)


def insert_run(
    connection: sqlite3.Connection,
    job: str,
    trigger: str,
    unrecorded: dict[int, Outcome],
    ended: RunEnd | None = None,
) -> int:
    """Start a run's row (or write one that `ended` at once); return its id.

    First the runs whose end could not be written are ended; the job's runs
    past the newest KEEP_RUNS go, except those still running.
    """
    with transaction(connection):
        connection.executemany(
            "UPDATE job_runs SET outcome = ?, outcome_detail = ? "
            "WHERE id = ? AND outcome = ?",
            [
                (outcome.kind, outcome.detail, run, RUNNING)
                for run, outcome in unrecorded.items()
            ],
        )
        end = ended or RunEnd(0.0, Outcome(RUNNING))
        cursor = connection.execute(
            "INSERT INTO job_runs (job, trigger, started_at, duration, outcome, "
            "outcome_detail, summary) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                job,
                trigger,
                time.time(),
                None if ended is None else end.duration,
                end.outcome.kind,
                end.outcome.detail,
                json.dumps(end.summary),
            ),
        )
        connection.execute(
            "DELETE FROM job_runs WHERE job = ? AND outcome != ? AND id NOT IN "
            "(SELECT id FROM job_runs WHERE job = ? ORDER BY id DESC LIMIT ?)",
            (job, RUNNING, job, KEEP_RUNS),
        )
    return int(cursor.lastrowid or 0)


def finish_run(connection: sqlite3.Connection, run: int, end: RunEnd) -> None:
    """Record how a run ended."""
    with transaction(connection):
        connection.execute(
            "UPDATE job_runs SET duration = ?, outcome = ?, outcome_detail = ?, "
            "summary = ? WHERE id = ?",
            (
                end.duration,
                end.outcome.kind,
                end.outcome.detail,
                json.dumps(end.summary),
                run,
            ),
        )


def adopt_runs(
    connection: sqlite3.Connection, job: str, runs: list[dict[str, Any]]
) -> dict[float, int]:
    """Add runs an owner recorded before the registry, oldest first.

    Each a mapping of `trigger`, `started_at`, `duration`, `outcome` (an
    `Outcome`) and `summary`; for a migration, inside its transaction.
    Answer the id each run has here, by its start.
    """
    connection.executemany(
        "INSERT INTO job_runs (job, trigger, started_at, duration, outcome, "
        "outcome_detail, summary) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                job,
                run["trigger"],
                run["started_at"],
                run["duration"],
                run["outcome"].kind,
                run["outcome"].detail,
                json.dumps(run["summary"]),
            )
            for run in sorted(runs, key=lambda run: run["started_at"])
        ],
    )
    return dict(
        connection.execute(
            "SELECT started_at, id FROM job_runs WHERE job = ?", (job,)
        ).fetchall()
    )


def interrupted_runs(connection: sqlite3.Connection) -> None:
    """Mark runs a stopped or killed Home Assistant left `running`."""
    with transaction(connection):
        connection.execute(
            "UPDATE job_runs SET outcome = ?, outcome_detail = ? WHERE outcome = ?",
            (INTERRUPTED.kind, INTERRUPTED.detail, RUNNING),
        )


def _run(row: tuple[Any, ...]) -> dict[str, Any]:
    found = dict(zip(_RUN_FIELDS, row, strict=True))
    return found | {"summary": json.loads(found["summary"])}


def list_runs(
    connection: sqlite3.Connection, job: str, limit: int = KEEP_RUNS
) -> list[dict[str, Any]]:
    """A job's runs, newest first."""
    return [
        _run(row)
        for row in connection.execute(
            f"SELECT {_COLUMNS} FROM job_runs WHERE job = ? ORDER BY id DESC LIMIT ?",
            (job, limit),
        )
    ]


def get_run(
    connection: sqlite3.Connection, job: str, run: int
) -> dict[str, Any] | None:
    """One run of `job`; None when it is not kept."""
    row = connection.execute(
        f"SELECT {_COLUMNS} FROM job_runs WHERE job = ? AND id = ?", (job, run)
    ).fetchone()
    return None if row is None else _run(row)


def kept_runs(connection: sqlite3.Connection, job: str) -> list[int]:
    """The ids of the job's runs still kept."""
    return [
        row[0]
        for row in connection.execute("SELECT id FROM job_runs WHERE job = ?", (job,))
    ]


def last_start(connection: sqlite3.Connection, job: str) -> float | None:
    """When the job's last run started that was not skipped."""
    row = connection.execute(
        "SELECT max(started_at) FROM job_runs WHERE job = ? AND outcome != ?",
        (job, SKIPPED),
    ).fetchone()
    return row[0]


def failures_in_a_row(connection: sqlite3.Connection, job: str) -> int:
    """How many of the job's last ended runs failed, skipped runs left out."""
    count = 0
    for (kind,) in connection.execute(
        "SELECT outcome FROM job_runs WHERE job = ? AND outcome NOT IN (?, ?) "
        "ORDER BY id DESC",
        (job, SKIPPED, RUNNING),
    ):
        if kind != FAILED:
            break
        count += 1
    return count


def first_seen(connection: sqlite3.Connection, job: str, now: float) -> float:
    """When the registry first timed the job (`now` if this is the first time)."""
    with transaction(connection):
        set_first_seen(connection, job, now)
    row = connection.execute(
        "SELECT at FROM job_first_seen WHERE job = ?", (job,)
    ).fetchone()
    return float(row[0])


def set_first_seen(connection: sqlite3.Connection, job: str, at: float) -> None:
    """Keep `at` as when the job was first timed, unless one is kept already."""
    connection.execute(
        "INSERT OR IGNORE INTO job_first_seen (job, at) VALUES (?, ?)", (job, at)
    )
