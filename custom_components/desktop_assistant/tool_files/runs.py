"""The last runs of each tool file, kept in `assistant.db` for the panel.

Every run through the registry is recorded (agents, intents, actions and the
panel's *Try it*), off the event loop; a store fault loses the row, never the
tool's answer.
"""

from collections.abc import Callable
import logging
import sqlite3
from typing import Any, Final

from homeassistant.core import HomeAssistant, callback

from ..store import Store, StoreError, transaction
from ..store.rows import keep_newest, newest_rows
from ..tools import ToolRegistry, ToolRun

_LOGGER = logging.getLogger(__name__)

KEEP_RUNS: Final = 20
# What a row keeps of a run: enough to recognise it, never a whole answer.
MAX_ARGUMENTS: Final = 1000
MAX_FIRST_LINE: Final = 200

_TABLE: Final = "tool_runs"
# What the panel gets of a run, by column.
_RUN_FIELDS: Final = {
    field: field
    for field in ("started_at", "duration", "outcome", "arguments", "first_line")
}


def record_run(connection: sqlite3.Connection, run: ToolRun) -> None:
    """Add a run; keep only the tool's newest KEEP_RUNS."""
    first_line = run.result.strip().split("\n", 1)[0]
    with transaction(connection):
        connection.execute(
            "INSERT INTO tool_runs (tool, started_at, duration, outcome, arguments, "
            "first_line) VALUES (?, ?, ?, ?, ?, ?)",
            (
                run.name,
                run.started_at,
                run.duration,
                "error" if run.failed else "ok",
                run.arguments[:MAX_ARGUMENTS],
                first_line[:MAX_FIRST_LINE],
            ),
        )
        keep_newest(connection, _TABLE, key="tool", value=run.name, keep=KEEP_RUNS)


def list_runs(connection: sqlite3.Connection, tool: str) -> list[dict[str, Any]]:
    """A tool's recorded runs, newest first."""
    return newest_rows(
        connection, _TABLE, _RUN_FIELDS, key="tool", value=tool, limit=KEEP_RUNS
    )


@callback
def async_record_runs(
    hass: HomeAssistant, registry: ToolRegistry, store: Store
) -> Callable[[], None]:
    """Record every run of the registry's tools into the store."""

    async def write(run: ToolRun) -> None:
        try:
            await store.async_run(lambda connection: record_run(connection, run))
        except StoreError:
            _LOGGER.debug("The run of %s was not recorded", run.name)

    @callback
    def listener(run: ToolRun) -> None:
        if store.available:
            hass.async_create_background_task(
                write(run), f"record a run of tool {run.name}"
            )

    return registry.add_run_listener(listener)
