"""The tool files' table in `assistant.db`: the last runs of each tool file."""

from typing import Final

from ..store import Migration

# One row per finished run, newest last; `arguments` is the JSON the tool got
# with every secret already replaced by `***`, `first_line` the start of its
# answer. `runs.record_run` keeps only the newest runs of each tool.
TOOL_RUNS_V5: Final = """
CREATE TABLE tool_runs (
    id INTEGER PRIMARY KEY,
    tool TEXT NOT NULL,
    started_at REAL NOT NULL,
    duration REAL NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'error')),
    arguments TEXT NOT NULL,
    first_line TEXT NOT NULL
);
CREATE INDEX tool_runs_by_tool ON tool_runs (tool, id);
"""

SCHEMA: Final = (Migration(5, "tool file runs", TOOL_RUNS_V5),)
