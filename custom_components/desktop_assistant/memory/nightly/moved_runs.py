"""Nightly runs moved to the jobs registry's ids (migration 10), and their old ids.

Before, a run had two ids: memory's own and the registry's. The migration
keys every run memory keeps by the registry's id: the runs memory kept
before the registry existed (set aside by migration 8, not handed over yet)
are handed to it here, through its `adopt_runs`. Each old id is kept in
`nightly_run_moved`, so that a link to a run by its old id still opens it
(`moved_run`). Functions of a connection, on the store's thread.
"""

import json
import sqlite3
from typing import Any

from ...jobs.outcome import Outcome
from ...jobs.runs import adopt_runs, set_first_seen
from .runs import JOB_NIGHTLY

# The statements after each run's new id is in `nightly_run_moved`: the ids
# are negated first, so that no new id meets an old one on the way.
_REKEY = """
DELETE FROM nightly_run_pages WHERE run NOT IN (SELECT old FROM nightly_run_moved);
DELETE FROM nightly_runs WHERE id NOT IN (SELECT old FROM nightly_run_moved);
UPDATE nightly_runs SET id = -id;
UPDATE nightly_run_pages SET run = -run;
UPDATE page_revisions SET run = -run WHERE run IS NOT NULL;
UPDATE nightly_runs
SET id = (SELECT run FROM nightly_run_moved WHERE old = -nightly_runs.id);
UPDATE nightly_run_pages
SET run = (SELECT run FROM nightly_run_moved WHERE old = -nightly_run_pages.run);
UPDATE page_revisions
SET run = (SELECT run FROM nightly_run_moved WHERE old = -page_revisions.run)
WHERE run IS NOT NULL;
DROP INDEX nightly_runs_by_job_run;
ALTER TABLE nightly_runs DROP COLUMN job_run;
DROP TABLE nightly_runs_set_aside;
DELETE FROM memory_state WHERE key IN ('first_seen', 'failed_runs');
"""


def key_runs_by_job_run(connection: sqlite3.Connection) -> None:
    """Migration 10: every nightly run under the registry's id; old ids kept."""
    connection.execute(
        "CREATE TABLE nightly_run_moved (old INTEGER PRIMARY KEY, run INTEGER NOT NULL)"
    )
    moves = _hand_over_set_aside(connection)
    moves += connection.execute(
        "SELECT id, job_run FROM nightly_runs WHERE job_run IS NOT NULL"
    ).fetchall()
    connection.executemany(
        "INSERT INTO nightly_run_moved (old, run) VALUES (?, ?)", moves
    )
    if (seen := _state(connection, "first_seen")) is not None:
        set_first_seen(connection, JOB_NIGHTLY, float(seen))
    # Parents and children change ids in turn; checked when the migration commits.
    connection.execute("PRAGMA defer_foreign_keys = ON")
    for statement in _REKEY.strip().split(";\n"):
        connection.execute(statement)


def _hand_over_set_aside(connection: sqlite3.Connection) -> list[tuple[int, int]]:
    """Give the registry the runs kept before it; answer (old id, new id) of each."""
    earlier = [
        {
            "old": row[0],
            "trigger": row[1],
            "started_at": row[2],
            "duration": row[3],
            "outcome": _outcome(row[4]),
            "summary": json.loads(row[5]),
        }
        for row in connection.execute(
            "SELECT run, trigger, started_at, duration, outcome, summary "
            "FROM nightly_runs_set_aside ORDER BY run"
        )
    ]
    if not earlier:
        return []
    ids = adopt_runs(connection, JOB_NIGHTLY, earlier)
    return [(run["old"], ids[run["started_at"]]) for run in earlier]


def _outcome(text: str) -> Outcome:
    """An outcome as one string (`failed: database locked`) as a kind and detail."""
    kind, _, detail = text.partition(": ")
    return Outcome(kind, detail or None)


def _state(connection: sqlite3.Connection, key: str) -> Any:
    row = connection.execute(
        "SELECT value FROM memory_state WHERE key = ?", (key,)
    ).fetchone()
    return None if row is None else row[0]


def moved_run(connection: sqlite3.Connection, old: int) -> int | None:
    """The registry's id of the run that had memory's id `old`; None if none."""
    row = connection.execute(
        "SELECT run FROM nightly_run_moved WHERE old = ?", (old,)
    ).fetchone()
    return None if row is None else int(row[0])
