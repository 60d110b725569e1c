"""The conversation record: turns, reads, deletes, retention and quiet.

Writes go through the record's WriteQueue (write_queue.py), off the event
loop and in order.
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
import logging
import sqlite3
from typing import Final

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import EVENT_HOMEASSISTANT_STOP
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers import (
    device_registry as dr,
    entity_registry as er,
)
from homeassistant.helpers.dispatcher import (
    async_dispatcher_connect,
    async_dispatcher_send,
)
from homeassistant.helpers.event import (
    async_track_time_interval,
)
from homeassistant.util import dt as dt_util

from ..const import (
    CONF_QUIET_MINUTES,
    CONF_RETENTION_DAYS,
    DEFAULT_QUIET_MINUTES,
    DEFAULT_RETENTION_DAYS,
    DOMAIN,
)
from ..store import Store, StoreError
from . import database, deletion
from .entries import turn_entries, user_entry
from .models import Channel, ConversationStart, Entry, TurnWrite
from .write_queue import WriteQueue

_LOGGER = logging.getLogger(__name__)

SIGNAL_QUIET: Final = f"{DOMAIN}_conversation_quiet"
QUIET_CHECK: Final = timedelta(minutes=1)


class InProgress(Exception):
    """A turn of the conversation is running."""


def heard_by_pipeline(hass: HomeAssistant, conversation_id: str) -> bool:
    """Whether an Assist pipeline turned speech into the running turn's text.

    The pipeline's run is found by its events (HA keeps the last runs of each
    pipeline for debugging): the one whose intent stage is running for this
    conversation, which went through speech-to-text.
    """
    if "assist_pipeline" not in hass.config.components:
        return False
    # Imported only when set up: assist_pipeline is an optional dependency.
    from homeassistant.components.assist_pipeline import (  # noqa: PLC0415
        PipelineEventType,
    )
    from homeassistant.components.assist_pipeline.runtime import (  # noqa: PLC0415
        KEY_ASSIST_PIPELINE,
    )

    pipeline_data = hass.data[KEY_ASSIST_PIPELINE]
    for runs in pipeline_data.pipeline_debug.values():
        for run in runs.values():
            types = [event.type for event in run.events]
            if (
                PipelineEventType.INTENT_START in types
                and PipelineEventType.INTENT_END not in types
                and (
                    run.events[types.index(PipelineEventType.INTENT_START)].data or {}
                ).get("conversation_id")
                == conversation_id
            ):
                return PipelineEventType.STT_END in types
    return False


# The record is found here by everything that reads it, tools included: a
# tool object must not hold it, as traces deep-copy the tools they list.


class Record:
    """The conversation record of every agent of the integration."""

    def __init__(self, hass: HomeAssistant, store: Store) -> None:
        """Record into `store`."""
        self.hass = hass
        self.store = store
        self._writes = WriteQueue(hass, store)
        # Conversation id -> how many of its turns are running.
        self._running: Counter[str] = Counter()
        self._unsubscribe: list[CALLBACK_TYPE] = []

    @property
    def available(self) -> bool:
        """Whether conversations can be recorded and read."""
        return self.store.available

    @callback
    def async_start(self) -> None:
        """Check for quiet conversations every minute."""
        self._unsubscribe += [
            async_track_time_interval(
                self.hass,
                self._async_check_quiet,
                QUIET_CHECK,
                cancel_on_shutdown=True,
            ),
        ]
        self.hass.bus.async_listen_once(EVENT_HOMEASSISTANT_STOP, self._async_stop)

    @callback
    def _async_stop(self, event: Event) -> None:
        while self._unsubscribe:
            self._unsubscribe.pop()()

    # Turns

    @callback
    def async_begin_turn(
        self,
        *,
        agent_id: str,
        config_entry_id: str | None,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> "TurnRecording | None":
        """Start recording a turn; `TurnRecording.async_end` writes it.

        None when there is nothing to record: the store is not open, or
        nothing was said.
        """
        if not self.available or not user_input.text.strip():
            return None
        index = next(
            (
                position
                for position in range(len(chat_log.content) - 1, -1, -1)
                if isinstance(chat_log.content[position], conversation.UserContent)
            ),
            None,
        )
        if index is None:
            return None
        conversation_id = chat_log.conversation_id
        spoken = heard_by_pipeline(self.hass, conversation_id)
        channel: Channel = (
            "voice" if spoken or user_input.satellite_id is not None else "text"
        )
        device_id, device_name = self._device_of(user_input)
        start = ConversationStart(
            conversation_id=conversation_id,
            agent_id=agent_id,
            config_entry_id=config_entry_id,
            channel=channel,
            device_id=device_id,
            device_name=device_name,
            language=user_input.language,
            user_id=user_input.context.user_id,
        )
        self._running[conversation_id] += 1
        return TurnRecording(
            self,
            start,
            chat_log,
            index + 1,
            user_entry(chat_log.content[index], spoken),
        )

    @callback
    def async_turn_ended(self, conversation_id: str) -> None:
        """Note that one running turn of the conversation is over."""
        self._running[conversation_id] -= 1
        if self._running[conversation_id] <= 0:
            del self._running[conversation_id]

    def in_progress(self, conversation_id: str) -> bool:
        """Whether a turn of the conversation is running."""
        return conversation_id in self._running

    def _device_of(
        self, user_input: conversation.ConversationInput
    ) -> tuple[str | None, str | None]:
        """The satellite's device, and its name as the household sees it."""
        device_id = user_input.device_id
        if device_id is None and user_input.satellite_id is not None:
            entity = er.async_get(self.hass).async_get(user_input.satellite_id)
            device_id = entity.device_id if entity else None
        if device_id is None:
            return None, None
        device = dr.async_get(self.hass).async_get(device_id)
        return device_id, (device.name_by_user or device.name) if device else None

    @callback
    def async_enqueue_turn(self, write: TurnWrite) -> None:
        """Append a turn's entries, after every write asked for before."""
        self._writes.async_enqueue_turn(write)

    async def async_run_write[T](
        self, work: Callable[[sqlite3.Connection], T], what: str
    ) -> T:
        """Run a write after those already queued, and return its result."""
        return await self._writes.async_run_write(work, what)

    # Reads

    async def async_read[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read on the store's thread."""
        return await self.store.async_run(work)

    # Deletes, retention, quiet

    async def async_delete(self, conversation_id: str) -> bool:
        """Delete a conversation; False when unknown. Raises InProgress."""
        if self.in_progress(conversation_id):
            raise InProgress(conversation_id)
        return await self.async_run_write(
            lambda connection: deletion.delete_conversation(
                connection, conversation_id
            ),
            f"deleting conversation {conversation_id}",
        )

    async def async_delete_older_than(self, days: float) -> int:
        """Delete conversations last active more than `days` ago."""
        cutoff = (dt_util.utcnow() - timedelta(days=days)).timestamp()
        keep = list(self._running)
        return await self.async_run_write(
            lambda connection: deletion.delete_conversations_before(
                connection, cutoff, keep
            ),
            "deleting old conversations",
        )

    async def async_apply_retention(self, now: datetime | None = None) -> int:
        """Delete the conversations older than their entry's retention."""
        now = now or dt_util.utcnow()
        cutoffs = []
        for entry in self.hass.config_entries.async_entries(DOMAIN):
            if days := retention_days(entry):
                cutoffs.append(
                    (entry.entry_id, (now - timedelta(days=days)).timestamp())
                )
            else:
                # Kept forever: a cutoff before any conversation.
                cutoffs.append((entry.entry_id, float("-inf")))
        default = (now - timedelta(days=DEFAULT_RETENTION_DAYS)).timestamp()
        keep = list(self._running)
        deleted = await self.async_run_write(
            lambda connection: deletion.delete_inactive_since(
                connection, cutoffs, default, keep
            ),
            "applying retention",
        )
        _LOGGER.debug(
            "Conversation record: retention deleted %s conversations", deleted
        )
        return deleted

    async def _async_check_quiet(self, now: datetime | None = None) -> None:
        """Mark conversations quiet after their entry's quiet time; tell listeners."""
        if not self.available:
            return
        now = now or dt_util.utcnow()
        minutes = {
            entry.entry_id: entry.options.get(CONF_QUIET_MINUTES, DEFAULT_QUIET_MINUTES)
            for entry in self.hass.config_entries.async_entries(DOMAIN)
        }
        try:
            active = await self.async_read(database.active_conversations)
            due = [
                (conversation_id, last_activity_at)
                for conversation_id, entry_id, last_activity_at in active
                if conversation_id not in self._running
                and now.timestamp() - last_activity_at
                >= 60 * float(minutes.get(entry_id, DEFAULT_QUIET_MINUTES))
            ]
            if not due:
                return
            at = now.timestamp()
            quiet = await self.async_run_write(
                lambda connection: database.mark_quiet(connection, due, at),
                "marking conversations quiet",
            )
        except StoreError:
            return  # reported by the store
        for conversation_id in quiet:
            async_dispatcher_send(self.hass, SIGNAL_QUIET, conversation_id)


@dataclass
class TurnRecording:
    """One running turn; `async_end` records what it said and did."""

    record: Record
    start: ConversationStart
    chat_log: conversation.ChatLog
    # Where the turn's answer begins in the chat log's content.
    index: int
    question: Entry
    ended: bool = field(default=False)

    @callback
    def async_end(
        self,
        fault: str | None = None,
        fault_sentence: str | None = None,
        *,
        server: str | None = None,
        model: str | None = None,
        unfinished: str = "",
        withheld: str = "",
    ) -> None:
        """Record the question, replies, tool calls and fault of the turn.

        `fault_sentence` is what the agent said about the fault, if anything;
        `server` and `model` answered it, and are kept with its replies;
        `unfinished` is the text of a reply the turn stopped in, and
        `withheld` the model's reply the fault sentence was said instead of,
        each kept as an interrupted reply.

        One write per turn, queued when the turn is over: while it runs, the
        database work does not compete with it.
        """
        if self.ended:
            return
        self.ended = True
        now = dt_util.utcnow().timestamp()
        entries = [
            replace(entry, server=server, model=model)
            if entry.kind == "assistant"
            else entry
            for entry in turn_entries(
                self.chat_log.content[self.index :],
                fault,
                fault_sentence,
                now,
                unfinished=unfinished,
                withheld=withheld,
            )
        ]
        self.record.async_enqueue_turn(
            TurnWrite(self.start, now, [self.question, *entries])
        )
        self.record.async_turn_ended(self.start.conversation_id)


def retention_days(entry: ConfigEntry) -> float:
    """How many days an entry keeps its conversations; 0 keeps them forever."""
    return float(entry.options.get(CONF_RETENTION_DAYS, DEFAULT_RETENTION_DAYS))


@callback
def async_listen_quiet(
    hass: HomeAssistant, listener: Callable[[str], None]
) -> CALLBACK_TYPE:
    """Call `listener(conversation_id)` when a conversation goes quiet.

    A conversation goes quiet after its entry's quiet time without activity;
    a later turn makes it active again, and it goes quiet again after that.
    """
    return async_dispatcher_connect(hass, SIGNAL_QUIET, listener)
