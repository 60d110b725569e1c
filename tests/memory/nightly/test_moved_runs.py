"""A store whose nightly runs have memory's old ids, migrated to the registry's.

Two generations of runs in one file: two kept by memory alone (before the
jobs registry: migration 8 set them aside, no start handed them over) and
two the registry recorded while memory kept them under ids of its own.
After the start that migrates it, every run is kept, listed, opened,
reverted and reached from its old id, by the registry's id alone.
"""

import json
from pathlib import Path
import sqlite3
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component

from custom_components.desktop_assistant import SCHEMAS
from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.memory.nightly import runs as nightly_runs
from custom_components.desktop_assistant.store import DB_FILE, in_order, transaction
from custom_components.desktop_assistant.store.store import connect

# Memory's migration that set its runs aside for the registry, and the one
# that keys them by the registry's ids.
SET_ASIDE_VERSION = 8
MOVED_VERSION = 10
REFUSAL = "Anouk's birthday was lost"


def migrated_to(path: Path, version: int) -> sqlite3.Connection:
    return connect(path, tuple(m for m in in_order(SCHEMAS) if m.version < version))


def created(connection: sqlite3.Connection, name: str, run: int) -> int:
    """A page a run created, as that schema's code wrote it, with the run's record."""
    text = f"{name} is Sara's friend.\n"
    (page_id,) = connection.execute(
        "INSERT INTO pages (name, kind, text, created_at, updated_at, revision)"
        " VALUES (?, 'person', ?, 900.0, 900.0, 1) RETURNING id",
        (name, text),
    ).fetchone()
    connection.execute(
        "INSERT INTO page_names VALUES (?, ?, ?, 0)", (name.lower(), page_id, name)
    )
    (revision,) = connection.execute(
        "INSERT INTO page_revisions (page, at, author, name, kind, aliases, text, run)"
        " VALUES (?, 900.0, 'nightly', ?, 'person', '[]', ?, ?) RETURNING id",
        (page_id, name, text, run),
    ).fetchone()
    connection.execute(
        "UPDATE pages SET revision = ? WHERE id = ?", (revision, page_id)
    )
    nightly_runs.record_change(
        connection,
        run,
        nightly_runs.PageChange(page_id, name, "create", None, text, None, revision),
    )
    return page_id


def runs_before_the_registry(path: Path) -> None:
    """Memory's own runs 1 (created Anouk) and 2 (failed), as before the jobs."""
    connection = migrated_to(path, SET_ASIDE_VERSION)
    with transaction(connection):
        for day, outcome in enumerate(("ok", "failed: database locked")):
            connection.execute(
                "INSERT INTO nightly_runs (trigger, started_at, duration, outcome, "
                "summary) VALUES ('schedule', ?, 5.0, ?, ?)",
                (
                    1000.0 + day,
                    outcome,
                    json.dumps({"notes": day, "refusals": [REFUSAL]}),
                ),
            )
        created(connection, "Anouk", 1)
    connection.close()


def runs_of_the_registry(path: Path) -> None:
    """Runs 3 and 4 of memory, the registry's 7 and 9 (retention ran between)."""
    connection = migrated_to(path, MOVED_VERSION)
    with transaction(connection):
        for job_run, job in enumerate(
            ("retention",) * 6 + ("nightly", "retention", "nightly"), start=1
        ):
            connection.execute(
                "INSERT INTO job_runs (id, job, trigger, started_at, duration, "
                "outcome, summary) VALUES (?, ?, 'schedule', ?, 1.0, 'ok', '{}')",
                (job_run, job, 2000.0 + job_run),
            )
        connection.executemany(
            "INSERT INTO nightly_runs (id, job_run, detail) VALUES (?, ?, '{}')",
            [(3, 7), (4, 9)],
        )
        created(connection, "Marco", 4)
    connection.close()


async def command(client: Any, **message: Any) -> Any:
    await client.send_json_auto_id(message)
    answer = await client.receive_json()
    assert answer["success"], answer
    return answer["result"]


async def test_runs_under_old_ids_are_kept_reachable_and_revertible(
    hass: HomeAssistant, hass_ws_client: Any
) -> None:
    path = Path(hass.config.path(DOMAIN, DB_FILE))
    await hass.async_add_executor_job(runs_before_the_registry, path)
    await hass.async_add_executor_job(runs_of_the_registry, path)
    assert await async_setup_component(hass, DOMAIN, {})
    client = await hass_ws_client(hass)
    memory = f"{DOMAIN}/memory"

    listed = (await command(client, type=f"{memory}/runs/list", limit=50))["runs"]
    assert [
        (run["started_at"], run["outcome"], run["outcome_detail"]) for run in listed
    ] == [
        (1001.0, "failed", "database locked"),
        (1000.0, "ok", None),
        (2009.0, "ok", None),
        (2007.0, "ok", None),
    ]
    ids = [run["id"] for run in listed]
    # The registry's runs keep their ids; memory's first two got new ones.
    assert ids[2:] == [9, 7]
    moved = {
        old: (await command(client, type=f"{memory}/runs/moved", old_run_id=old))[
            "run_id"
        ]
        for old in (1, 2, 3, 4)
    }
    assert moved == {1: ids[1], 2: ids[0], 3: 7, 4: 9}

    for name, old in (("Anouk", 1), ("Marco", 4)):
        run = await command(client, type=f"{memory}/runs/get", run_id=moved[old])
        (change,) = run["pages"]
        assert (change["name"], change["action"]) == (name, "create")
        page = await command(
            client, type=f"{memory}/pages/get", page_id=change["page_id"]
        )
        assert [revision["run_id"] for revision in page["revisions"]] == [moved[old]]
        reverted = await command(
            client,
            type=f"{memory}/runs/revert",
            run_id=moved[old],
            page_id=change["page_id"],
        )
        assert reverted == {"page_id": change["page_id"], "reverted": "deleted"}
    first = await command(client, type=f"{memory}/runs/get", run_id=moved[1])
    assert first["detail"]["refusals"] == [REFUSAL]
    assert "refusals" not in first["summary"]

    await client.send_json_auto_id({"type": f"{memory}/runs/moved", "old_run_id": 5})
    assert (await client.receive_json())["error"]["code"] == "not_found"
