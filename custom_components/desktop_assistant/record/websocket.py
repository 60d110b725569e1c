"""Websocket commands (admin only) to browse, search and delete conversations.

The contract of the Assistant panel: list pages newest first with filters
that hold across pages, one conversation with its entries, delete. Each
command is a module-level handler, as in Home Assistant core's
`assist_pipeline/websocket_api.py`; `async_register_commands` registers them.
Errors: `invalid_format`, `not_found`, `in_progress` (a turn is running),
`unavailable` (the database failed).
"""

from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
import probatio as vol

from ..const import DOMAIN
from ..reader import CURATOR
from ..runtime import DATA_RECORD
from ..text import words
from ..websocket_commands import ERR_IN_PROGRESS, Refused, admin_command
from . import database
from .conversation_record import InProgress
from .search import MAX_WORDS, match_expression

MAX_LIMIT: Final = 100
# The owner filter's word for the household's conversations.
HOUSEHOLD: Final = "household"
# A cursor is an activity number: an SQLite integer, written in digits.
MAX_CURSOR: Final = 2**63 - 1


def encode_cursor(cursor: int | None) -> str | None:
    """The `next` of a page: where the following page starts."""
    return None if cursor is None else str(cursor)


def decode_cursor(text: str) -> int:
    """A `before` cursor back as the activity it stands for.

    Raises ValueError for anything `encode_cursor` cannot have written:
    signs, spaces, underscores, and numbers past an SQLite integer.
    """
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(MAX_CURSOR)):
        raise ValueError(text)
    if (cursor := int(text)) > MAX_CURSOR:
        raise ValueError(text)
    return cursor


def owner_filter(owner: str | None) -> str | None:
    """The list's owner filter: `household`, a user id, or none."""
    return database.HOUSEHOLD_OWNER if owner == HOUSEHOLD else owner


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the record's websocket commands."""
    for command in (
        websocket_list_conversations,
        websocket_get_conversation,
        websocket_list_devices,
        websocket_delete_conversation,
    ):
        websocket_api.async_register_command(hass, command)


@admin_command(
    {
        vol.Required("type"): f"{DOMAIN}/conversations/list",
        vol.Optional("limit", default=20): vol.All(
            int, vol.Range(min=1, max=MAX_LIMIT)
        ),
        vol.Optional("before"): str,
        vol.Optional("channel"): vol.In(["voice", "text"]),
        vol.Optional("query"): str,
        vol.Optional("device_id"): str,
        # A user id, or `household` for the conversations of no user.
        vol.Optional("owner"): str,
    }
)
async def websocket_list_conversations(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """A page of conversations, newest activity first, with its `next` cursor.

    An administrator curates: every member's conversations, each with whose
    it is (`user_id`, None for the household's).
    """
    record = hass.data[DATA_RECORD]
    try:
        before = decode_cursor(msg["before"]) if "before" in msg else None
    except ValueError as err:
        raise Refused(
            websocket_api.ERR_INVALID_FORMAT, "`before` is not a cursor"
        ) from err
    # The search box's words as typed: every one must be in the
    # conversation, as the start of a word.
    words_of_query = list(dict.fromkeys(words(msg.get("query") or "")))
    if len(words_of_query) > MAX_WORDS:
        raise Refused(
            websocket_api.ERR_INVALID_FORMAT, f"Search for at most {MAX_WORDS} words"
        )
    conversations, following = await record.async_read(
        lambda db: database.list_conversations(
            db,
            reader=CURATOR,
            limit=msg["limit"],
            before=before,
            channel=msg.get("channel"),
            device_id=msg.get("device_id"),
            owner=owner_filter(msg.get("owner")),
            match=match_expression(words_of_query) if words_of_query else None,
        )
    )
    for summary in conversations:
        summary["in_progress"] = record.in_progress(summary["conversation_id"])
    return {"conversations": conversations, "next": encode_cursor(following)}


@admin_command(
    {
        vol.Required("type"): f"{DOMAIN}/conversations/get",
        vol.Required("conversation_id"): str,
    }
)
async def websocket_get_conversation(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """One conversation with its entries."""
    record = hass.data[DATA_RECORD]
    conversation_id = msg["conversation_id"]
    found = await record.async_read(
        lambda db: database.get_conversation(db, conversation_id)
    )
    if found is None:
        raise Refused(websocket_api.ERR_NOT_FOUND, "No such conversation")
    found["in_progress"] = record.in_progress(conversation_id)
    return found


@admin_command({vol.Required("type"): f"{DOMAIN}/conversations/devices"})
async def websocket_list_devices(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """The devices conversations were held on, for the panel's filter."""
    return {"devices": await hass.data[DATA_RECORD].async_read(database.list_devices)}


@admin_command(
    {
        vol.Required("type"): f"{DOMAIN}/conversations/delete",
        vol.Required("conversation_id"): str,
    }
)
async def websocket_delete_conversation(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """Delete a conversation, unless one of its turns is running."""
    try:
        deleted = await hass.data[DATA_RECORD].async_delete(msg["conversation_id"])
    except InProgress as err:
        raise Refused(
            ERR_IN_PROGRESS,
            "A turn of this conversation is running; delete it when it ends",
        ) from err
    if not deleted:
        raise Refused(websocket_api.ERR_NOT_FOUND, "No such conversation")
