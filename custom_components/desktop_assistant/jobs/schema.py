"""The jobs' tables in `assistant.db`: every run of every registered job.

An owner that keeps more of a run (memory: what a nightly run changed, for
revert) keys it by the run's id here, through the registry's functions.
`job_first_seen` is when the registry first timed each job, so that a new
install does not take the nights before it as missed.
"""

from typing import Final

from ..store import Migration

# `outcome` is `running` until the run ends; `summary` is a JSON object
# (retention: `{"deleted": n}`; the nightly pass: its counts).
JOB_RUNS_V6: Final = """
CREATE TABLE job_runs (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    trigger TEXT NOT NULL,
    started_at REAL NOT NULL,
    duration REAL,
    outcome TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX job_runs_by_job ON job_runs (job, id);
"""

# The outcome's kind and its detail become two columns (`failed: database
# locked` was one string); the first sighting of each timed job moves here.
JOB_OUTCOMES_V9: Final = """
ALTER TABLE job_runs ADD COLUMN outcome_detail TEXT;
UPDATE job_runs SET outcome = 'failed', outcome_detail = substr(outcome, 9)
WHERE outcome LIKE 'failed: %';
CREATE TABLE job_first_seen (
    job TEXT PRIMARY KEY,
    at REAL NOT NULL
);
"""

SCHEMA: Final = (
    Migration(6, "job runs", JOB_RUNS_V6),
    Migration(9, "job outcomes as a kind and a detail", JOB_OUTCOMES_V9),
)
