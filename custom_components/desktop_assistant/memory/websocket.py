"""Websocket commands (admin only) to browse, edit and revert memory.

The contract of the Assistant panel's Memory and Nightly pages. Errors carry
the code of the `PageError` that refused the request (`panel/describe` lists
them with the page kinds and run outcomes), `unavailable` when the database
failed. A nightly run is named by the jobs registry's id of it; *Run now*
is the registry's `jobs/run_now`.
"""

from collections.abc import Callable
import functools
import sqlite3
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
import probatio as vol

from ..const import DOMAIN
from ..record import database
from ..runtime import DATA_MEMORY, DATA_NIGHTLY_JOB, DATA_RECORD
from ..websocket_commands import AsyncAnswer, Message, admin_command
from . import pages
from .detail import page_detail
from .errors import PageError
from .nightly.moved_runs import moved_run
from .nightly.revert import revert_page
from .nightly.runs import get_run
from .page_reads import PAGE_KINDS, Page, get_page
from .pages import NAME_CHARS

PREFIX: Final = f"{DOMAIN}/memory"

NAME = vol.All(str, vol.Length(min=1, max=NAME_CHARS))
ALIASES = vol.All([str], vol.Length(max=50))
PAGE_TYPE = vol.In(list(PAGE_KINDS))

# A person's change to one page, on the database thread at `now`.
type PageWrite = Callable[[sqlite3.Connection, float, Message], Page]
type Write = Callable[[sqlite3.Connection, float, Message], Any]


def memory_command(
    schema: dict[Any, Any],
) -> Callable[[AsyncAnswer], websocket_api.WebSocketCommandHandler]:
    """A command of memory's: a PageError answers with its own code."""
    return admin_command(schema, coded=(PageError,))


def write_command(
    schema: dict[Any, Any],
) -> Callable[[Write], websocket_api.WebSocketCommandHandler]:
    """A command whose answer is what its write returns.

    The write runs on the database thread, in one transaction.
    """

    def register(write: Write) -> websocket_api.WebSocketCommandHandler:
        @functools.wraps(write)
        async def answer(
            hass: HomeAssistant,
            connection: websocket_api.ActiveConnection,
            msg: dict[str, Any],
        ) -> Any:
            return await hass.data[DATA_MEMORY].async_write(
                lambda db, now: write(db, now, msg)
            )

        return memory_command(schema)(answer)

    return register


def page_write_command(
    schema: dict[Any, Any],
) -> Callable[[PageWrite], websocket_api.WebSocketCommandHandler]:
    """A command that writes one page, then answers the page as it now is."""

    def register(write: PageWrite) -> websocket_api.WebSocketCommandHandler:
        @functools.wraps(write)
        def written(db: sqlite3.Connection, now: float, msg: Message) -> Any:
            return page_detail(db, get_page(db, write(db, now, msg).id))

        return write_command(schema)(written)

    return register


@memory_command({vol.Required("type"): f"{PREFIX}/pages/list"})
async def websocket_list_pages(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """The live and recently deleted pages, and the profile's size."""
    memory = hass.data[DATA_MEMORY]
    live, deleted = await memory.async_pages()
    return {
        "profile": memory.usage(),
        "pages": [page.summary() for page in live],
        "deleted": [page.summary() for page in deleted],
    }


@memory_command(
    {vol.Required("type"): f"{PREFIX}/pages/get", vol.Required("page_id"): int}
)
async def websocket_get_page(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """A page with its text, revisions and links."""
    return await hass.data[DATA_MEMORY].async_read(
        lambda db: page_detail(db, get_page(db, msg["page_id"]))
    )


@page_write_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/create",
        vol.Required("name"): NAME,
        vol.Required("page_type"): PAGE_TYPE,
        vol.Optional("aliases", default=[]): ALIASES,
        vol.Optional("text", default=""): str,
    }
)
def websocket_create_page(db: sqlite3.Connection, now: float, msg: Message) -> Page:
    """Create a page; a person may take a name that was deleted forever."""
    return pages.create_page(
        db,
        msg["name"],
        msg["page_type"],
        text=msg["text"],
        aliases=msg["aliases"],
        now=now,
        author="person",
        allow_tombstoned=True,
    )


@page_write_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/update",
        vol.Required("page_id"): int,
        vol.Required("base_revision"): int,
        vol.Optional("overwrite", default=False): bool,
        vol.Optional("text"): str,
        vol.Optional("page_type"): PAGE_TYPE,
        vol.Optional("aliases"): ALIASES,
    }
)
def websocket_update_page(db: sqlite3.Connection, now: float, msg: Message) -> Page:
    """Edit a page, refused when it moved on since `base_revision`."""
    return pages.edit_page(
        db,
        msg["page_id"],
        now,
        "person",
        text=msg.get("text"),
        kind=msg.get("page_type"),
        aliases=msg.get("aliases"),
        base_revision=None if msg["overwrite"] else msg["base_revision"],
    )


@page_write_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/rename",
        vol.Required("page_id"): int,
        vol.Required("name"): NAME,
    }
)
def websocket_rename_page(db: sqlite3.Connection, now: float, msg: Message) -> Page:
    """Rename a page; the old name stays as an alias."""
    return pages.rename_page(db, msg["page_id"], msg["name"], now)


@page_write_command(
    {vol.Required("type"): f"{PREFIX}/pages/delete", vol.Required("page_id"): int}
)
def websocket_delete_page(db: sqlite3.Connection, now: float, msg: Message) -> Page:
    """Move a page to recently deleted."""
    return pages.delete_page(db, msg["page_id"], now)


@page_write_command(
    {vol.Required("type"): f"{PREFIX}/pages/restore", vol.Required("page_id"): int}
)
def websocket_restore_page(db: sqlite3.Connection, now: float, msg: Message) -> Page:
    """Bring a recently deleted page back."""
    return pages.restore_page(db, msg["page_id"], now)


@write_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/delete_forever",
        vol.Required("page_id"): int,
        vol.Required("confirm"): str,
    }
)
def websocket_delete_forever(
    db: sqlite3.Connection, now: float, msg: Message
) -> dict[str, Any]:
    """Delete a page and its text everywhere memory keeps it."""
    return {"unlinked": pages.delete_forever(db, msg["page_id"], msg["confirm"], now)}


@page_write_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/restore_revision",
        vol.Required("page_id"): int,
        vol.Required("revision"): int,
    }
)
def websocket_restore_revision(
    db: sqlite3.Connection, now: float, msg: Message
) -> Page:
    """Make an earlier revision the page's latest."""
    return pages.restore_revision(db, msg["page_id"], msg["revision"], now)


@memory_command(
    {
        vol.Required("type"): f"{PREFIX}/runs/list",
        vol.Optional("limit", default=14): vol.All(int, vol.Range(min=1, max=50)),
    }
)
async def websocket_list_runs(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """The most recent runs, as the jobs registry keeps them, and whether one runs."""
    job = hass.data[DATA_NIGHTLY_JOB]
    return {"runs": await job.async_runs(msg["limit"]), "running": job.running}


@memory_command(
    {vol.Required("type"): f"{PREFIX}/runs/get", vol.Required("run_id"): int}
)
async def websocket_get_run(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """A run with its changes; each source says whether the record still has it."""
    recorded = await hass.data[DATA_NIGHTLY_JOB].async_get_run(msg["run_id"])
    if recorded is None:
        raise PageError("not_found", f"there is no run {msg['run_id']}")
    del recorded["id"]  # the run's `run_id`, as memory answers it
    run = await hass.data[DATA_MEMORY].async_read(lambda db: get_run(db, msg["run_id"]))
    run |= recorded
    record = hass.data[DATA_RECORD]
    for change in run["pages"]:
        sources = []
        for source in change["sources"]:
            conversation = await record.async_read(
                lambda db, cid=source: database.get_conversation(db, cid)
            )
            sources.append({"conversation_id": source, "gone": conversation is None})
        change["sources"] = sources
    return run


@memory_command(
    {vol.Required("type"): f"{PREFIX}/runs/moved", vol.Required("old_run_id"): int}
)
async def websocket_moved_run(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """The registry's id of a run named by its id from before (an old link)."""
    run = await hass.data[DATA_MEMORY].async_read(
        lambda db: moved_run(db, msg["old_run_id"])
    )
    if run is None:
        raise PageError("not_found", f"no run had the id {msg['old_run_id']}")
    return {"run_id": run}


@write_command(
    {
        vol.Required("type"): f"{PREFIX}/runs/revert",
        vol.Required("run_id"): int,
        vol.Required("page_id"): int,
    }
)
def websocket_revert_run_page(
    db: sqlite3.Connection, now: float, msg: Message
) -> dict[str, Any]:
    """Undo one run's change to one page."""
    return revert_page(db, msg["run_id"], msg["page_id"], now)


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register memory's websocket commands."""
    for command in (
        websocket_list_pages,
        websocket_get_page,
        websocket_create_page,
        websocket_update_page,
        websocket_rename_page,
        websocket_delete_page,
        websocket_restore_page,
        websocket_delete_forever,
        websocket_restore_revision,
        websocket_list_runs,
        websocket_get_run,
        websocket_moved_run,
        websocket_revert_run_page,
    ):
        websocket_api.async_register_command(hass, command)
