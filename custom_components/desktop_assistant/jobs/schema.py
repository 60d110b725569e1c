"""The jobs' table in `assistant.db`: every run of every registered job.

An owner that keeps more of a run (memory: what a nightly run changed, for
revert) keys it by the run's id here, through the registry's functions.
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

SCHEMA: Final = (Migration(6, "job runs", JOB_RUNS_V6),)
