"""Chat's websocket commands, for every signed-in user, each on their own threads.

Members see and continue only their own threads; an administrator may also
read any text conversation (from the Conversations tab's *Open in Chat*).
Unknown and other people's threads answer alike, `not_found`, so a member
learns nothing of them. Errors: `empty_message`, `message_too_long`,
`not_found`, `voice_conversation`, `in_progress`, `unknown_agent`,
`unavailable` (the database failed).
"""

import secrets
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.util import dt as dt_util
import probatio as vol

from ..const import DOMAIN
from ..record import database as record_database
from ..record.search import MAX_WORDS, match_expression
from ..runtime import DATA_CHAT, DATA_RECORD
from ..store import StoreError
from ..text import words
from ..websocket_commands import (
    ERR_IN_PROGRESS,
    ERR_UNAVAILABLE,
    Refused,
    user_command,
)
from . import database

ERR_EMPTY: Final = "empty_message"
ERR_TOO_LONG: Final = "message_too_long"
ERR_VOICE: Final = "voice_conversation"
ERR_UNKNOWN_AGENT: Final = "unknown_agent"
ERROR_CODES: Final = (
    ERR_EMPTY,
    ERR_TOO_LONG,
    websocket_api.ERR_NOT_FOUND,
    ERR_VOICE,
    ERR_IN_PROGRESS,
    ERR_UNKNOWN_AGENT,
)
# The longest message Chat takes, in bytes of UTF-8: a long paste fits,
# a runaway one is refused before it reaches the agent or the record.
MAX_MESSAGE_BYTES: Final = 100_000
# How many characters of the first message name a new thread.
TITLE_LENGTH: Final = 80
MAX_THREADS: Final = 200


def thread_schema(name: str) -> dict[Any, Any]:
    """The schema of chat's command `name` about one thread."""
    return {
        vol.Required("type"): f"{DOMAIN}/chat/{name}",
        vol.Required("thread_id"): str,
    }


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register chat's websocket commands."""
    for command in (
        websocket_agents,
        websocket_list_threads,
        websocket_get_thread,
        websocket_send,
        websocket_stop,
        websocket_subscribe,
    ):
        websocket_api.async_register_command(hass, command)


def our_agents(hass: HomeAssistant) -> list[dict[str, str]]:
    """The conversation agents of desktop_assistant, by name."""
    agents = [
        {
            "agent_id": entry.entity_id,
            "name": (
                state.name if (state := hass.states.get(entry.entity_id)) else None
            )
            or entry.name
            or entry.original_name
            or entry.entity_id,
        }
        for entry in er.async_get(hass).entities.values()
        if entry.platform == DOMAIN and entry.domain == "conversation"
    ]
    return sorted(agents, key=lambda agent: agent["name"].casefold())


@user_command({vol.Required("type"): f"{DOMAIN}/chat/agents"})
def websocket_agents(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """The agents a new thread may talk to."""
    return {"agents": our_agents(hass)}


@user_command(
    {
        vol.Required("type"): f"{DOMAIN}/chat/list",
        vol.Optional("query"): str,
        vol.Optional("limit", default=50): vol.All(
            int, vol.Range(min=1, max=MAX_THREADS)
        ),
    }
)
async def websocket_list_threads(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """The user's own threads, newest first; with a query, those that say it."""
    query_words = list(dict.fromkeys(words(msg.get("query") or "")))
    if len(query_words) > MAX_WORDS:
        raise Refused(
            websocket_api.ERR_INVALID_FORMAT, f"Search for at most {MAX_WORDS} words"
        )
    match = match_expression(query_words) if query_words else None
    user_id = connection.user.id
    turns = hass.data[DATA_CHAT]
    threads = await turns.store.async_run(
        lambda db: database.list_threads(db, user_id, match, msg["limit"])
    )
    for thread in threads:
        thread["in_progress"] = turns.in_progress(thread["thread_id"])
    return {"threads": threads}


async def readable_thread(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, thread_id: str
) -> dict[str, Any] | None:
    """The thread if the user may read it: their own, or any text one for an admin."""
    thread = await hass.data[DATA_CHAT].store.async_run(
        lambda db: database.get_thread(db, thread_id)
    )
    if thread is not None and thread["user_id"] == connection.user.id:
        return thread
    if not connection.user.is_admin:
        return None
    return thread or {"thread_id": thread_id, "user_id": None, "title": None}


@user_command(thread_schema("get"))
async def websocket_get_thread(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """One thread with its turns as the record keeps them."""
    thread_id = msg["thread_id"]
    if (thread := await readable_thread(hass, connection, thread_id)) is None:
        raise Refused(websocket_api.ERR_NOT_FOUND, "No such thread")
    found = await hass.data[DATA_RECORD].async_read(
        lambda db: record_database.get_conversation(db, thread_id)
    )
    if found is None and thread["user_id"] is None:
        raise Refused(websocket_api.ERR_NOT_FOUND, "No such thread")
    if found is not None and found["channel"] == "voice":
        raise Refused(ERR_VOICE, "A voice conversation is not a chat thread")
    return thread | {
        "agent_id": thread.get("agent_id") or (found or {}).get("agent_id"),
        "entries": found["entries"] if found else [],
        "in_progress": hass.data[DATA_CHAT].in_progress(thread_id),
        "own": thread["user_id"] == connection.user.id,
    }


def checked_text(text: str) -> str:
    """The message, unless it is empty or longer than MAX_MESSAGE_BYTES."""
    if not text.strip():
        raise Refused(ERR_EMPTY, "The message is empty")
    if len(text.encode()) > MAX_MESSAGE_BYTES:
        raise Refused(
            ERR_TOO_LONG, f"The message is over {MAX_MESSAGE_BYTES // 1000} kB"
        )
    return text


async def own_thread(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, thread_id: str
) -> dict[str, Any]:
    """The user's own thread; a voice conversation or anything else is refused."""
    thread = await hass.data[DATA_CHAT].store.async_run(
        lambda db: database.get_thread(db, thread_id)
    )
    if thread is not None and thread["user_id"] == connection.user.id:
        return thread
    if thread is None:
        found = await hass.data[DATA_RECORD].async_read(
            lambda db: record_database.get_conversation(db, thread_id)
        )
        if found is not None and found["channel"] == "voice":
            raise Refused(ERR_VOICE, "A voice conversation is not a chat thread")
    raise Refused(websocket_api.ERR_NOT_FOUND, "No such thread")


async def new_thread(
    hass: HomeAssistant, user_id: str, agent_id: str | None, text: str
) -> dict[str, Any]:
    """A new thread of the user with one of our agents, named by its first words."""
    if agent_id not in {agent["agent_id"] for agent in our_agents(hass)}:
        raise Refused(ERR_UNKNOWN_AGENT, "Choose one of the assistant's agents")
    assert agent_id is not None
    # Not a ULID: Home Assistant keeps a chosen id, but answers a forgotten
    # ULID with a new conversation (helpers/chat_session.py).
    thread_id = f"chat-{secrets.token_hex(10)}"
    title = " ".join(text.split())[:TITLE_LENGTH]
    at = dt_util.utcnow().timestamp()
    await hass.data[DATA_RECORD].async_run_write(
        lambda db: database.create_thread(
            db, thread_id, user_id=user_id, agent_id=agent_id, title=title, at=at
        ),
        f"new chat thread {thread_id}",
    )
    return {"thread_id": thread_id, "agent_id": agent_id}


@user_command(
    {
        vol.Required("type"): f"{DOMAIN}/chat/send",
        vol.Optional("thread_id"): str,
        vol.Optional("agent_id"): str,
        vol.Required("text"): str,
        vol.Optional("language"): str,
    }
)
async def websocket_send(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Start a turn of the user's thread, or of a new one; the turn runs on."""
    text = checked_text(msg["text"])
    turns = hass.data[DATA_CHAT]
    if "thread_id" in msg:
        thread = await own_thread(hass, connection, msg["thread_id"])
        if thread["agent_id"] not in {a["agent_id"] for a in our_agents(hass)}:
            raise Refused(ERR_UNKNOWN_AGENT, "This thread's agent is gone")
    else:
        thread = await new_thread(hass, connection.user.id, msg.get("agent_id"), text)
    thread_id = thread["thread_id"]
    if turns.in_progress(thread_id) or hass.data[DATA_RECORD].in_progress(thread_id):
        raise Refused(
            ERR_IN_PROGRESS, "The previous message of this thread is still answered"
        )
    turns.async_start(thread, text, connection.user.id, msg.get("language"))
    return {"thread_id": thread_id}


@user_command(thread_schema("stop"))
async def websocket_stop(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Stop the running turn of the user's thread; what it said is recorded."""
    thread = await own_thread(hass, connection, msg["thread_id"])
    return {"stopped": hass.data[DATA_CHAT].async_stop(thread["thread_id"])}


@websocket_api.websocket_command(thread_schema("subscribe"))
@websocket_api.async_response
async def websocket_subscribe(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> None:
    """Stream the thread's turns as they run: text, reasoning, tool calls, the end."""
    thread_id = msg["thread_id"]
    try:
        readable = await readable_thread(hass, connection, thread_id)
    except StoreError as err:
        connection.send_error(msg["id"], ERR_UNAVAILABLE, str(err))
        return
    if readable is None:
        connection.send_error(msg["id"], websocket_api.ERR_NOT_FOUND, "No such thread")
        return

    @callback
    def forward(event: dict[str, Any]) -> None:
        connection.send_message(websocket_api.event_message(msg["id"], event))

    connection.send_result(msg["id"])
    connection.subscriptions[msg["id"]] = hass.data[DATA_CHAT].async_listen(
        thread_id, forward
    )
