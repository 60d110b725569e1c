"""Websocket commands (admin only) to browse, edit and revert memory.

The contract of the Assistant panel's Memory and Nightly pages. Errors carry
the code of the `PageError` that refused the request (`memory/describe`
lists them with the page types and run outcomes), `unavailable` when the
database failed.
"""

from collections.abc import Awaitable, Callable
import functools
import sqlite3
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
import probatio as vol

from ..const import DOMAIN
from ..record import database
from ..runtime import DATA_MEMORY, DATA_NIGHTLY, DATA_RECORD
from ..store import StoreError
from . import pages
from .detail import page_detail
from .errors import ERROR_CODES, PageError
from .forget import delete_everywhere
from .page import PAGE_KINDS, Page, get_page
from .pages import NAME_CHARS
from .runs import OUTCOMES, get_run, list_runs

ERR_UNAVAILABLE: Final = "unavailable"
PREFIX: Final = f"{DOMAIN}/memory"

type Answer = Callable[[HomeAssistant, dict[str, Any]], Awaitable[dict[str, Any]]]

NAME = vol.All(str, vol.Length(min=1, max=NAME_CHARS))
ALIASES = vol.All([str], vol.Length(max=50))
PAGE_TYPE = vol.In(list(PAGE_KINDS))


def _answers(answer: Answer) -> websocket_api.AsyncWebSocketCommandHandler:
    """Send the answer's result, or its PageError or StoreError as an error."""

    @functools.wraps(answer)
    async def handler(
        hass: HomeAssistant,
        connection: websocket_api.ActiveConnection,
        msg: dict[str, Any],
    ) -> None:
        try:
            result = await answer(hass, msg)
        except PageError as err:
            connection.send_error(msg["id"], err.code, str(err))
            return
        except StoreError as err:
            connection.send_error(msg["id"], ERR_UNAVAILABLE, str(err))
            return
        connection.send_result(msg["id"], result)

    return handler


async def _async_write_page(
    hass: HomeAssistant, work: Callable[[sqlite3.Connection, float], Page]
) -> dict[str, Any]:
    """Write, then answer the page as it now is."""
    memory = hass.data[DATA_MEMORY]
    page = await memory.async_write(work)
    return await memory.async_read(
        lambda connection: page_detail(connection, get_page(connection, page.id))
    )


@websocket_api.websocket_command({vol.Required("type"): f"{PREFIX}/describe"})
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_describe(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """The page types, error codes and run outcomes the panel shows."""
    return {
        "page_types": list(PAGE_KINDS),
        "error_codes": [*ERROR_CODES, ERR_UNAVAILABLE],
        "run_outcomes": list(OUTCOMES),
        "name_characters": NAME_CHARS,
    }


@websocket_api.websocket_command({vol.Required("type"): f"{PREFIX}/pages/list"})
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_list_pages(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """The live and recently deleted pages, and the profile's size."""
    memory = hass.data[DATA_MEMORY]
    live, deleted = await memory.async_pages()
    return {
        "profile": memory.usage(),
        "pages": [page.summary() for page in live],
        "deleted": [page.summary() for page in deleted],
    }


@websocket_api.websocket_command(
    {vol.Required("type"): f"{PREFIX}/pages/get", vol.Required("page_id"): int}
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_get_page(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """A page with its text, revisions and links."""
    return await hass.data[DATA_MEMORY].async_read(
        lambda connection: page_detail(connection, get_page(connection, msg["page_id"]))
    )


@websocket_api.websocket_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/create",
        vol.Required("name"): NAME,
        vol.Required("page_type"): PAGE_TYPE,
        vol.Optional("aliases", default=[]): ALIASES,
        vol.Optional("text", default=""): str,
    }
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_create_page(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Create a page; a person may take a name that was deleted forever."""
    return await _async_write_page(
        hass,
        lambda connection, now: pages.create_page(
            connection,
            msg["name"],
            msg["page_type"],
            text=msg["text"],
            aliases=msg["aliases"],
            now=now,
            author="person",
            allow_tombstoned=True,
        ),
    )


@websocket_api.websocket_command(
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
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_update_page(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Edit a page, refused when it moved on since `base_revision`."""
    return await _async_write_page(
        hass,
        lambda connection, now: pages.edit_page(
            connection,
            msg["page_id"],
            now,
            "person",
            text=msg.get("text"),
            kind=msg.get("page_type"),
            aliases=msg.get("aliases"),
            base_revision=None if msg["overwrite"] else msg["base_revision"],
        ),
    )


@websocket_api.websocket_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/rename",
        vol.Required("page_id"): int,
        vol.Required("name"): NAME,
    }
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_rename_page(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Rename a page; the old name stays as an alias."""
    return await _async_write_page(
        hass,
        lambda connection, now: pages.rename_page(
            connection, msg["page_id"], msg["name"], now
        ),
    )


@websocket_api.websocket_command(
    {vol.Required("type"): f"{PREFIX}/pages/delete", vol.Required("page_id"): int}
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_delete_page(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Move a page to recently deleted."""
    return await _async_write_page(
        hass,
        lambda connection, now: pages.delete_page(connection, msg["page_id"], now),
    )


@websocket_api.websocket_command(
    {vol.Required("type"): f"{PREFIX}/pages/restore", vol.Required("page_id"): int}
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_restore_page(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Bring a recently deleted page back."""
    return await _async_write_page(
        hass,
        lambda connection, now: pages.restore_page(connection, msg["page_id"], now),
    )


@websocket_api.websocket_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/delete_forever",
        vol.Required("page_id"): int,
        vol.Required("confirm"): str,
    }
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_delete_forever(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Delete a page and its text everywhere memory keeps it."""
    unlinked = await hass.data[DATA_MEMORY].async_write(
        lambda connection, now: delete_everywhere(
            connection, msg["page_id"], msg["confirm"], now
        )
    )
    return {"unlinked": unlinked}


@websocket_api.websocket_command(
    {
        vol.Required("type"): f"{PREFIX}/pages/restore_revision",
        vol.Required("page_id"): int,
        vol.Required("revision"): int,
    }
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_restore_revision(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Make an earlier revision the page's latest."""
    return await _async_write_page(
        hass,
        lambda connection, now: pages.restore_revision(
            connection, msg["page_id"], msg["revision"], now
        ),
    )


@websocket_api.websocket_command(
    {
        vol.Required("type"): f"{PREFIX}/runs/list",
        vol.Optional("limit", default=14): vol.All(int, vol.Range(min=1, max=50)),
    }
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_list_runs(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """The most recent runs, and whether one is running."""
    return {
        "runs": await hass.data[DATA_MEMORY].async_read(
            lambda connection: list_runs(connection, msg["limit"])
        ),
        "running": hass.data[DATA_NIGHTLY].running,
    }


@websocket_api.websocket_command(
    {vol.Required("type"): f"{PREFIX}/runs/get", vol.Required("run_id"): int}
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_get_run(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """A run with its changes; each source says whether the record still has it."""
    run = await hass.data[DATA_MEMORY].async_read(
        lambda connection: get_run(connection, msg["run_id"])
    )
    record = hass.data[DATA_RECORD]
    for change in run["pages"]:
        sources = []
        for source in change["sources"]:
            conversation = await record.async_read(
                lambda connection, cid=source: database.get_conversation(
                    connection, cid
                )
            )
            sources.append({"conversation_id": source, "gone": conversation is None})
        change["sources"] = sources
    return run


@websocket_api.websocket_command(
    {
        vol.Required("type"): f"{PREFIX}/runs/revert",
        vol.Required("run_id"): int,
        vol.Required("page_id"): int,
    }
)
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_revert_run_page(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Undo one run's change to one page."""
    return await hass.data[DATA_NIGHTLY].async_revert(msg["run_id"], msg["page_id"])


@websocket_api.websocket_command({vol.Required("type"): f"{PREFIX}/runs/run_now"})
@websocket_api.require_admin
@websocket_api.async_response
@_answers
async def websocket_run_now(hass: HomeAssistant, msg: dict[str, Any]) -> dict:
    """Run the nightly pass now; `in_progress` while one runs."""
    nightly = hass.data[DATA_NIGHTLY]
    if nightly.running:
        raise PageError("in_progress", "the nightly pass is already running")
    return await nightly.async_run("person")


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register memory's websocket commands."""
    for command in (
        websocket_describe,
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
        websocket_revert_run_page,
        websocket_run_now,
    ):
        websocket_api.async_register_command(hass, command)
