"""The record's writes, worked through in order by one task, off the event loop.

A turn queues its entries when it has answered and does not wait for them;
turns ending together (satellites talking at once) share one transaction.
A write the store cannot do (locked, full, a bug in the work) fails alone:
the task goes on with the next, and the turns batched with it are retried
one by one.
"""

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
import logging
import sqlite3
from typing import Any, Final

from homeassistant.core import HomeAssistant, callback

from ..const import DOMAIN
from ..store import Store, StoreError, StoreLocked, StoreUnwritable
from . import database
from .models import TurnWrite

_LOGGER = logging.getLogger(__name__)

# A write that fails because the file is locked or cannot be written is
# tried again after these pauses, then dropped.
RETRY_DELAYS: Final = (1.0, 5.0, 30.0)
# Writes waiting for the database beyond this are dropped, not queued.
MAX_PENDING: Final = 1000
# Writes start this many turns of the event loop after the first is queued
# (not a time: a clock frozen in tests must not stop them).
WRITE_DELAY: Final = 3


@dataclass
class Write:
    """Work for the database, in the order it was asked for."""

    work: Callable[[sqlite3.Connection], Any]
    # What the work is, for a warning; never the transcript.
    what: str
    done: asyncio.Future[Any] | None = None
    # A turn's entries: consecutive turns are written in one transaction.
    turn: TurnWrite | None = None


def turn_write(turns: list[TurnWrite]) -> Write:
    """The write of consecutive turns' entries, in one transaction."""
    if len(turns) == 1:
        what = f"entries of conversation {turns[0].start.conversation_id}"
    else:
        what = f"entries of {len(turns)} turns"
    return Write(
        lambda connection: database.append_turns(connection, turns),
        what,
        turn=turns[0] if len(turns) == 1 else None,
    )


class WriteQueue:
    """Writes for one store, done in the order they were asked for."""

    def __init__(self, hass: HomeAssistant, store: Store) -> None:
        """Queue writes for `store`."""
        self.hass = hass
        self.store = store
        self._pending: deque[Write] = deque()
        self._writer: asyncio.Task[None] | None = None

    @callback
    def async_enqueue_turn(self, write: TurnWrite) -> None:
        """Append a turn's entries, after every write asked for before."""
        self._enqueue(turn_write([write]))

    async def async_run_write[T](
        self, work: Callable[[sqlite3.Connection], T], what: str
    ) -> T:
        """Run a write after those already queued, and return its result."""
        done: asyncio.Future[T] = self.hass.loop.create_future()
        self._enqueue(Write(work, what, done))
        return await done

    @callback
    def _enqueue(self, write: Write) -> None:
        if len(self._pending) >= MAX_PENDING:
            _LOGGER.warning(
                "Conversation record: too many waiting writes; dropped %s", write.what
            )
            if write.done is not None:
                write.done.set_exception(StoreLocked("too many waiting writes"))
            return
        self._pending.append(write)
        if self._writer is None:
            # Not eager: the turn that asked does not wait for the database.
            self._writer = self.hass.async_create_task(
                self._async_write_pending(),
                f"{DOMAIN} record writer",
                eager_start=False,
            )

    async def _async_write_pending(self) -> None:
        try:
            # The turn that asked ends first, and turns ending meanwhile
            # share one transaction.
            for _ in range(WRITE_DELAY):
                await asyncio.sleep(0)
            while self._pending:
                turns = self._next_turns()
                if len(turns) > 1:
                    await self._async_write_turns(turns)
                else:
                    await self._async_do(self._pending.popleft())
        finally:
            self._writer = None

    def _next_turns(self) -> list[TurnWrite]:
        """The turns queued next to each other at the front of the queue."""
        turns: list[TurnWrite] = []
        for write in self._pending:
            if write.turn is None:
                break
            turns.append(write.turn)
        return turns

    async def _async_write_turns(self, turns: list[TurnWrite]) -> None:
        """Write turns in one transaction; one by one if their data failed it.

        One turn the store refuses (text SQLite cannot hold, say) must not
        take the others of its batch with it. A file locked, unwritable,
        corrupt or closed (a subclass) was tried enough already.
        """
        for _ in turns:
            self._pending.popleft()
        failure = await self._async_do(turn_write(turns))
        if failure is None or type(failure) is not StoreError:
            return
        for turn in turns:
            await self._async_do(turn_write([turn]))

    async def _async_do(self, write: Write) -> StoreError | None:
        """Do one write and settle its future; the error when it failed."""
        try:
            result = await self._async_write(write)
        except StoreError as err:
            failure = err
        except Exception as err:  # a bug in one write must not stop the others
            _LOGGER.exception("Conversation record: %s failed", write.what)
            failure = StoreError(f"{write.what} failed: {err}")
        else:
            if write.done is not None and not write.done.done():
                write.done.set_result(result)
            return None
        if write.done is not None and not write.done.done():
            write.done.set_exception(failure)
        return failure

    async def _async_write(self, write: Write) -> Any:
        for delay in (*RETRY_DELAYS, None):
            try:
                return await self.store.async_run(write.work)
            except (StoreLocked, StoreUnwritable) as err:
                if delay is None:
                    _LOGGER.warning(
                        "Conversation record: dropped %s after %s tries: %s",
                        write.what,
                        len(RETRY_DELAYS) + 1,
                        err,
                    )
                    raise
                await asyncio.sleep(delay)
            except StoreError as err:
                _LOGGER.warning("Conversation record: dropped %s: %s", write.what, err)
                raise
        raise AssertionError("unreachable")
