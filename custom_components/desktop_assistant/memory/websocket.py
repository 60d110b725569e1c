"""Websocket commands (admin only) to browse, edit and revert memory.

The contract of the Assistant panel's Memory and Nightly pages. Errors carry
the code of the `MemoryError` that refused the request (`not_found`,
`changed`, `name_taken`, `tombstoned`, `deleted`, `confirmation`, `profile`,
`invalid_type`, `invalid_name`, `edited_since`), `in_progress` for a run
asked while one runs, `unavailable` when the database failed.
"""

from collections.abc import Callable
import sqlite3
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
import probatio as vol

from ..const import DOMAIN
from ..store import StoreError
from . import pages, runs
from .memory import Memory
from .pages import PAGE_KINDS, MemoryError, Page

ERR_IN_PROGRESS: Final = "in_progress"
ERR_UNAVAILABLE: Final = "unavailable"
PREFIX: Final = f"{DOMAIN}/memory"

type Handler = Callable[[dict[str, Any]], Any]


def page_detail(connection: sqlite3.Connection, page: Page) -> dict[str, Any]:
    """A page with its text, revisions, links and backlinks."""
    return page.summary() | {
        "text": page.text,
        "revisions": pages.revisions(connection, page.id),
        "links": pages.outlinks(connection, page),
        "backlinks": pages.backlinks(connection, page),
    }


@callback
def async_register_commands(hass: HomeAssistant, memory: Memory) -> None:
    """Register memory's websocket commands."""

    def command(
        name: str, fields: dict[Any, Any], handle: Handler
    ) -> websocket_api.AsyncWebSocketCommandHandler:
        @websocket_api.websocket_command(
            {vol.Required("type"): f"{PREFIX}/{name}", **fields}
        )
        @websocket_api.require_admin
        @websocket_api.async_response
        async def handler(
            hass: HomeAssistant,
            connection: websocket_api.ActiveConnection,
            msg: dict[str, Any],
        ) -> None:
            try:
                result = await handle(msg)
            except MemoryError as err:
                connection.send_error(msg["id"], err.code, str(err))
                return
            except StoreError as err:
                connection.send_error(msg["id"], ERR_UNAVAILABLE, str(err))
                return
            connection.send_result(msg["id"], result)

        return handler

    def write(work: Callable[[sqlite3.Connection, float], Page]) -> Any:
        """Write, then answer the page as it now is."""

        async def run() -> dict[str, Any]:
            page = await memory.async_write(work)
            return await memory.async_read(
                lambda connection: page_detail(
                    connection, pages.get_page(connection, page.id)
                )
            )

        return run()

    async def list_pages(msg: dict[str, Any]) -> dict[str, Any]:
        live, deleted = await memory.async_pages()
        return {
            "profile": memory.usage(),
            "pages": [page.summary() for page in live],
            "deleted": [page.summary() for page in deleted],
        }

    async def get_page(msg: dict[str, Any]) -> dict[str, Any]:
        return await memory.async_read(
            lambda connection: page_detail(
                connection, pages.get_page(connection, msg["page_id"])
            )
        )

    async def create_page(msg: dict[str, Any]) -> dict[str, Any]:
        # A person may create a page whose name was deleted forever.
        return await write(
            lambda connection, now: pages.create_page(
                connection,
                msg["name"],
                msg["page_type"],
                text=msg["text"],
                aliases=msg["aliases"],
                now=now,
                author="person",
                allow_tombstoned=True,
            )
        )

    async def update_page(msg: dict[str, Any]) -> dict[str, Any]:
        return await write(
            lambda connection, now: pages.edit_page(
                connection,
                msg["page_id"],
                now,
                "person",
                text=msg.get("text"),
                kind=msg.get("page_type"),
                aliases=msg.get("aliases"),
                base_revision=None if msg["overwrite"] else msg["base_revision"],
            )
        )

    async def rename_page(msg: dict[str, Any]) -> dict[str, Any]:
        return await write(
            lambda connection, now: pages.rename_page(
                connection, msg["page_id"], msg["name"], now
            )
        )

    async def delete_page(msg: dict[str, Any]) -> dict[str, Any]:
        return await write(
            lambda connection, now: pages.delete_page(connection, msg["page_id"], now)
        )

    async def restore_page(msg: dict[str, Any]) -> dict[str, Any]:
        return await write(
            lambda connection, now: pages.restore_page(connection, msg["page_id"], now)
        )

    async def delete_forever(msg: dict[str, Any]) -> dict[str, Any]:
        unlinked = await memory.async_write(
            lambda connection, now: pages.delete_forever(
                connection, msg["page_id"], msg["confirm"], now
            )
        )
        return {"unlinked": unlinked}

    async def restore_revision(msg: dict[str, Any]) -> dict[str, Any]:
        return await write(
            lambda connection, now: pages.restore_revision(
                connection, msg["page_id"], msg["revision"], now
            )
        )

    async def list_runs(msg: dict[str, Any]) -> dict[str, Any]:
        return {
            "runs": await memory.async_read(
                lambda connection: runs.list_runs(connection, msg["limit"])
            ),
            "running": memory.nightly.running,
        }

    async def get_run(msg: dict[str, Any]) -> dict[str, Any]:
        return await memory.async_read(
            lambda connection: runs.get_run(
                connection,
                msg["run_id"],
                lambda source: runs.conversation_exists(connection, source),
            )
        )

    async def revert_run_page(msg: dict[str, Any]) -> dict[str, Any]:
        return await memory.nightly.async_revert(msg["run_id"], msg["page_id"])

    async def run_now(msg: dict[str, Any]) -> dict[str, Any]:
        if memory.nightly.running:
            raise MemoryError(ERR_IN_PROGRESS, "the nightly pass is already running")
        return await memory.nightly.async_run("person")

    aliases = vol.All([str], vol.Length(max=50))
    page_type = vol.In(list(PAGE_KINDS))
    for handler in (
        command("pages/list", {}, list_pages),
        command("pages/get", {vol.Required("page_id"): int}, get_page),
        command(
            "pages/create",
            {
                vol.Required("name"): vol.All(str, vol.Length(min=1, max=200)),
                vol.Required("page_type"): page_type,
                vol.Optional("aliases", default=[]): aliases,
                vol.Optional("text", default=""): str,
            },
            create_page,
        ),
        command(
            "pages/update",
            {
                vol.Required("page_id"): int,
                vol.Required("base_revision"): int,
                vol.Optional("overwrite", default=False): bool,
                vol.Optional("text"): str,
                vol.Optional("page_type"): page_type,
                vol.Optional("aliases"): aliases,
            },
            update_page,
        ),
        command(
            "pages/rename",
            {
                vol.Required("page_id"): int,
                vol.Required("name"): vol.All(str, vol.Length(min=1, max=200)),
            },
            rename_page,
        ),
        command("pages/delete", {vol.Required("page_id"): int}, delete_page),
        command("pages/restore", {vol.Required("page_id"): int}, restore_page),
        command(
            "pages/delete_forever",
            {vol.Required("page_id"): int, vol.Required("confirm"): str},
            delete_forever,
        ),
        command(
            "pages/restore_revision",
            {vol.Required("page_id"): int, vol.Required("revision"): int},
            restore_revision,
        ),
        command(
            "runs/list",
            {vol.Optional("limit", default=14): vol.All(int, vol.Range(min=1, max=50))},
            list_runs,
        ),
        command("runs/get", {vol.Required("run_id"): int}, get_run),
        command(
            "runs/revert",
            {vol.Required("run_id"): int, vol.Required("page_id"): int},
            revert_run_page,
        ),
        command("runs/run_now", {}, run_now),
    ):
        websocket_api.async_register_command(hass, handler)
