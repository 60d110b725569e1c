"""The panel's move of a page between a person and the household.

An administrator decides whose a page is: a revision records the move, so
that it reverts like every edit. The owner must be a member now: a forged
user id, or a former member's, is refused.
"""

from typing import Any

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant
import probatio as vol

from ..const import DOMAIN
from ..members import async_is_member
from ..runtime import DATA_MEMORY
from ..websocket_commands import Refused, admin_command
from .detail import page_detail
from .errors import PageError
from .page_reads import get_page
from .pages import move_page

# The owner a page moves to when it becomes the household's.
HOUSEHOLD = "household"


@admin_command(
    {
        vol.Required("type"): f"{DOMAIN}/memory/pages/move",
        vol.Required("page_id"): int,
        # A member's user id, or `household`.
        vol.Required("owner"): str,
    },
    coded=(PageError,),
)
async def websocket_move_page(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Make the page a member's or the household's; answer it as it now is."""
    user_id = None if msg["owner"] == HOUSEHOLD else msg["owner"]
    if user_id is not None and not await async_is_member(hass, user_id):
        raise Refused(websocket_api.ERR_NOT_FOUND, "No such member")
    memory = hass.data[DATA_MEMORY]
    page = await memory.async_write(
        lambda db, now: move_page(db, msg["page_id"], user_id, now)
    )
    return await memory.async_read(lambda db: page_detail(db, get_page(db, page.id)))
