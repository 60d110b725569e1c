"""The jobs' table in `assistant.db`: every run of every registered job.

Memory's nightly pass keeps, besides, what each of its runs changed
(`nightly_runs`), for its Nightly page and revert.
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
