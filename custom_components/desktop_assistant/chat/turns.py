"""A chat turn, run on the server whoever watches it, and its live events.

A turn is a task of Home Assistant's, not of a websocket connection: a page
that closes or reloads leaves it running, and the record keeps it. It runs
as the Assist pipeline runs an agent: the thread's chat session and chat log
are opened here, with a delta listener, and the agent's own
`async_get_chat_log` reuses that log. When Home Assistant has forgotten the
thread, its history is rebuilt from the record first.
"""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
import logging
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.core import Context, Event, HomeAssistant, callback
from homeassistant.helpers.json import json_dumps
from homeassistant.util import dt as dt_util

from ..chat_session import async_get_chat_session
from ..record import database as record_database
from ..runtime import DATA_RECORD
from ..store import Store, StoreError
from . import database
from .history import rebuilt_history

_LOGGER = logging.getLogger(__name__)

# A page that subscribes mid-turn gets what it missed; a turn's events are
# kept up to this many (a long answer streams a few thousand).
MAX_KEPT_EVENTS: Final = 20_000

type Listener = Callable[[dict[str, Any]], None]


@dataclass
class RunningTurn:
    """One thread's turn in progress: the question, and what has streamed so far."""

    thread: dict[str, Any]
    text: str
    user_id: str
    language: str | None
    task: asyncio.Task[None] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


def delta_event(delta: dict[str, Any]) -> dict[str, Any] | None:
    """A chat log delta as the page reads it; None for what it does not show."""
    if delta.get("role") == "tool_result":
        result = delta.get("result") or {}
        data = result.get("data")
        text = data["result"] if isinstance(data, dict) and "result" in data else data
        return {
            "type": "tool_result",
            "tool_call_id": delta["tool_call_id"],
            "tool_name": delta["tool_name"],
            "result": text if isinstance(text, str) else json_dumps(text),
            "error": bool(result.get("error")),
        }
    event: dict[str, Any] = {"type": "delta"}
    if delta.get("role") == "assistant":
        event["start"] = True
    if content := delta.get("content"):
        event["content"] = content
    if thinking := delta.get("thinking_content"):
        event["thinking"] = thinking
    if calls := delta.get("tool_calls"):
        event["tool_calls"] = [
            {"id": call.id, "tool_name": call.tool_name, "arguments": call.tool_args}
            for call in calls
        ]
    return event if len(event) > 1 else None


class ChatTurns:
    """The running turns of every thread."""

    def __init__(self, hass: HomeAssistant, store: Store) -> None:
        """Run turns in `hass`; `store` holds chat's table."""
        self.hass = hass
        self.store = store
        self.running: dict[str, RunningTurn] = {}
        self.listeners: dict[str, set[Listener]] = {}

    @callback
    def async_stop_all(self, _event: Event | None = None) -> None:
        """Stop every running turn: Home Assistant is stopping, and records them."""
        for turn in self.running.values():
            if turn.task is not None:
                turn.task.cancel()

    def in_progress(self, thread_id: str) -> bool:
        """Whether a turn of the thread is running."""
        return thread_id in self.running

    @callback
    def async_start(
        self, thread: dict[str, Any], text: str, user_id: str, language: str | None
    ) -> None:
        """Start a turn of the thread; the caller checked none is running."""
        turn = RunningTurn(thread, text, user_id, language)
        self.running[thread["thread_id"]] = turn
        turn.task = self.hass.async_create_task(
            self._async_run(turn),
            f"chat turn {thread['thread_id']}",
            eager_start=True,
        )

    @callback
    def async_stop(self, thread_id: str) -> bool:
        """Stop the thread's running turn; False when none runs."""
        if (turn := self.running.get(thread_id)) is None or turn.task is None:
            return False
        turn.task.cancel()
        return True

    @callback
    def async_listen(self, thread_id: str, listener: Listener) -> Callable[[], None]:
        """Hear the thread's turns; those of a running one so far first.

        With no turn running the listener hears `idle` at once: a page that
        read the thread while its turn ran, which ended before the page
        listened, reads it again.
        """
        if (turn := self.running.get(thread_id)) is not None:
            for event in turn.events:
                listener(event)
        else:
            listener({"type": "idle"})
        listeners = self.listeners.setdefault(thread_id, set())
        listeners.add(listener)

        @callback
        def unlisten() -> None:
            listeners.discard(listener)
            if not listeners and self.listeners.get(thread_id) is listeners:
                del self.listeners[thread_id]

        return unlisten

    @callback
    def _async_emit(
        self, thread_id: str, turn: RunningTurn, event: dict[str, Any]
    ) -> None:
        """Keep the event for late listeners and pass it on."""
        if len(turn.events) < MAX_KEPT_EVENTS:
            turn.events.append(event)
        for listener in list(self.listeners.get(thread_id, ())):
            listener(event)

    async def _async_run(self, turn: RunningTurn) -> None:
        """Run the turn; its listeners hear how it ended, however it ended."""
        thread_id = turn.thread["thread_id"]
        end: dict[str, Any] = {"type": "end"}
        self._async_emit(thread_id, turn, {"type": "start", "text": turn.text})
        try:
            end |= await self._async_converse(turn)
        except asyncio.CancelledError:
            end["stopped"] = True
            raise
        except ValueError:
            # Home Assistant has no such agent: removed since the check.
            _LOGGER.warning("Chat thread %s: its agent is gone", thread_id)
            end["error"] = "unknown_agent"
        finally:
            try:
                await self._async_touch(thread_id)
            finally:
                del self.running[thread_id]
                self._async_emit(thread_id, turn, end)

    async def _async_history(self, thread: dict[str, Any]) -> list[Any]:
        """The thread's earlier turns, rebuilt from the record."""
        record = self.hass.data[DATA_RECORD]
        try:
            found = await record.async_read(
                lambda db: record_database.get_conversation(db, thread["thread_id"])
            )
        except StoreError:
            return []  # reported by the store; the turn goes on without it
        return rebuilt_history(thread["agent_id"], found["entries"] if found else [])

    async def _async_converse(self, turn: RunningTurn) -> dict[str, Any]:
        """Ask the thread's agent, streaming its deltas to the turn's listeners."""
        thread = turn.thread

        @callback
        def listen(_chat_log: conversation.ChatLog, delta: dict[str, Any]) -> None:
            if (event := delta_event(delta)) is not None:
                self._async_emit(thread["thread_id"], turn, event)

        context = Context(user_id=turn.user_id)
        with (
            async_get_chat_session(self.hass, thread["thread_id"], context) as session,
            conversation.async_get_chat_log(
                self.hass, session, chat_log_delta_listener=listen
            ) as chat_log,
        ):
            if len(chat_log.content) == 1:
                # Only the system prompt: Home Assistant forgot the thread.
                chat_log.content.extend(await self._async_history(thread))
            chat_log.async_add_user_content(conversation.UserContent(content=turn.text))
            result = await conversation.async_converse(
                self.hass,
                turn.text,
                thread["thread_id"],
                context,
                turn.language,
                thread["agent_id"],
            )
        response = result.response
        return {
            "speech": response.speech.get("plain", {}).get("speech", ""),
            "error": response.error_code.value if response.error_code else None,
        }

    async def _async_touch(self, thread_id: str) -> None:
        """Move the thread up its owner's list, after the record wrote the turn."""
        at = dt_util.utcnow().timestamp()
        try:
            await self.hass.data[DATA_RECORD].async_run_write(
                lambda db: database.touch_thread(db, thread_id, at),
                f"chat thread {thread_id}",
            )
        except StoreError:
            return  # reported by the store
