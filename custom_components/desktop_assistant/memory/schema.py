"""Memory's tables in assistant.db (its migrations: `SCHEMA`, below).

A page's names (its name and aliases) live in `page_names`, keyed by the
folded name, so two pages can never share a name ignoring case and accents.
Every change of a page is a row of `page_revisions`; `pages.revision` is the
latest. `page_search` indexes names and text for recall.
Conversations that went quiet wait in `extraction_queue` for the nightly
pass; `extracted_conversations` says how far it read each one, and of which
conversation (`started_at`: a deleted id used again is a new conversation).
A nightly run's trigger, times, outcome and summary are the jobs registry's
(`job_runs`); `nightly_runs` keeps, under the registry's id of the run, what
revert and Delete forever need: the changes and the `detail` (refusals
included). `nightly_run_moved` keeps the ids runs had before (migration 10).
"""

from typing import Final

from ..store import Migration
from .nightly.moved_runs import key_runs_by_job_run

MEMORY_V2: Final = """
CREATE TABLE pages (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    deleted_at REAL,
    revision INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX pages_by_update ON pages (updated_at DESC) WHERE deleted_at IS NULL;
CREATE TABLE page_names (
    folded TEXT PRIMARY KEY,
    page INTEGER NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    is_alias INTEGER NOT NULL
);
CREATE INDEX page_names_by_page ON page_names (page);
CREATE TABLE page_revisions (
    id INTEGER PRIMARY KEY,
    page INTEGER NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    at REAL NOT NULL,
    author TEXT NOT NULL
        CHECK (author IN ('remember', 'extraction', 'nightly', 'person')),
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    aliases TEXT NOT NULL,
    text TEXT NOT NULL,
    run INTEGER,
    source TEXT,
    note TEXT
);
CREATE INDEX page_revisions_by_page ON page_revisions (page, id);
CREATE TABLE tombstones (
    folded TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE VIRTUAL TABLE page_search USING fts5 (
    names,
    text,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE page_search_vocab USING fts5vocab (page_search, 'row');
CREATE TABLE nightly_runs (
    id INTEGER PRIMARY KEY,
    trigger TEXT NOT NULL,
    started_at REAL NOT NULL,
    duration REAL,
    outcome TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '{}',
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE nightly_run_pages (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL REFERENCES nightly_runs (id) ON DELETE CASCADE,
    page INTEGER,
    page_name TEXT NOT NULL,
    action TEXT NOT NULL,
    before_text TEXT,
    after_text TEXT,
    before_revision INTEGER,
    after_revision INTEGER,
    dropped TEXT NOT NULL DEFAULT '[]',
    sources TEXT NOT NULL DEFAULT '[]',
    absorbed TEXT
);
CREATE INDEX nightly_run_pages_by_run ON nightly_run_pages (run);
CREATE TABLE memory_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE extracted_conversations (
    conversation_id TEXT PRIMARY KEY,
    last_entry INTEGER NOT NULL,
    at REAL NOT NULL
);
"""

MEMORY_V3: Final = """
ALTER TABLE extracted_conversations ADD COLUMN started_at TEXT;
CREATE TABLE extraction_queue (
    conversation_id TEXT PRIMARY KEY,
    queued_at REAL NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0
);
"""

# The runs from before are set aside, without the refusals that quote pages,
# for migration 10 to give the registry; a run left running then
# was interrupted. Its refusals move into its detail.
NIGHTLY_RUNS_V8: Final = """
CREATE TABLE nightly_runs_set_aside (
    run INTEGER PRIMARY KEY,
    trigger TEXT NOT NULL,
    started_at REAL NOT NULL,
    duration REAL,
    outcome TEXT NOT NULL,
    summary TEXT NOT NULL
);
INSERT INTO nightly_runs_set_aside
SELECT id, trigger, started_at, duration,
    CASE outcome WHEN 'running' THEN 'failed: interrupted' ELSE outcome END,
    json_remove(summary, '$.refusals')
FROM nightly_runs;
UPDATE nightly_runs
SET detail = json_set(detail, '$.refusals', json_extract(summary, '$.refusals'))
WHERE json_type(summary, '$.refusals') = 'array';
ALTER TABLE nightly_runs DROP COLUMN trigger;
ALTER TABLE nightly_runs DROP COLUMN started_at;
ALTER TABLE nightly_runs DROP COLUMN duration;
ALTER TABLE nightly_runs DROP COLUMN outcome;
ALTER TABLE nightly_runs DROP COLUMN summary;
ALTER TABLE nightly_runs ADD COLUMN job_run INTEGER;
CREATE UNIQUE INDEX nightly_runs_by_job_run ON nightly_runs (job_run);
"""

# Whose each page is (issue 38): one person's (their user id) or, NULL, the
# household's, as every page before. Each revision keeps whose the page was,
# so that a move between a person and the household reverts like any edit.
# A person's names are keyed in `page_names` as the user id, a unit
# separator, then the folded name (`page_reads.name_key`): two people, and
# the household, may each have a page of the same name.
PAGE_OWNERS_V13: Final = """
ALTER TABLE pages ADD COLUMN user_id TEXT;
ALTER TABLE page_revisions ADD COLUMN user_id TEXT;
CREATE INDEX pages_by_user ON pages (user_id, updated_at);
"""

SCHEMA: Final = (
    Migration(2, "long-term memory", MEMORY_V2),
    Migration(3, "extraction queue", MEMORY_V3),
    Migration(8, "nightly runs recorded by the jobs registry", NIGHTLY_RUNS_V8),
    Migration(10, "nightly runs under the registry's ids", key_runs_by_job_run),
    Migration(13, "whose each page is", PAGE_OWNERS_V13),
)
