"""The household's memory on the store: writes, reads, and what the model sees.

The prompt contexts (the household's, and each person's with pages of
their own) are rebuilt in the same store job as every change, so the tools
API reads them without waiting and each stays byte-identical between
changes (the model's prompt cache holds).
"""

from collections.abc import Callable
import sqlite3
import time
from typing import Any, Final

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.util import dt as dt_util

from ..reader import CURATOR
from ..store import Store, StoreError, transaction
from . import pages
from .context import build_context, owners_with_pages, profile_usage
from .errors import PageError
from .page_reads import Page, list_pages
from .search import recall, recall_text
from .text import note_line

# The context of a known person with no page of their own yet (no user id
# is empty): the household's pages, and their profile, still empty.
NO_PAGES: Final = ""
PROFILE_BUDGET: Final = 800


class Memory:
    """The household's pages in assistant.db."""

    def __init__(self, hass: HomeAssistant, store: Store) -> None:
        """Start with an empty context until `async_load`."""
        self.hass = hass
        self.store = store
        # What the model sees, by whose turn it is (None: no user's).
        self.contexts: dict[str | None, str] = {None: ""}
        self.profile_tokens = 0
        self.profile_budget = PROFILE_BUDGET
        self._listeners: list[Callable[[], None]] = []

    async def async_load(self) -> None:
        """Read the context of what is stored."""
        self.contexts, self.profile_tokens = await self.store.async_run(_context)

    @property
    def context(self) -> str:
        """What the model sees of memory in a turn of no user: the household's."""
        return self.contexts[None]

    def context_for(self, user_id: str | None) -> str:
        """What the model sees in a turn of `user_id`: theirs and the household's.

        A person with no page yet sees the household's, told as a person's:
        what they say of themselves goes on their own pages.
        """
        if user_id is None:
            return self.contexts[None]
        return self.contexts.get(user_id, self.contexts[NO_PAGES])

    @callback
    def async_add_listener(self, listener: Callable[[], None]) -> CALLBACK_TYPE:
        """Call `listener` after every change of memory."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def async_write[T](self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        """Run `work(connection, now)` in one transaction; refresh the context."""

        def job(
            connection: sqlite3.Connection,
        ) -> tuple[T, dict[str | None, str], int]:
            with transaction(connection):
                result = work(connection, time.time())
            return result, *_context(connection)

        result, contexts, usage = await self.store.async_run(job)
        changed = contexts != self.contexts or usage != self.profile_tokens
        self.contexts, self.profile_tokens = contexts, usage
        if changed:
            for listener in list(self._listeners):
                listener()
        return result

    async def async_read[T](self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work(connection)` on the store's thread."""
        return await self.store.async_run(work)

    async def async_remember(
        self,
        page: str,
        fact: str,
        *,
        author: str = "remember",
        kind: str = "other",
        source: str | None = None,
        day: str | None = None,
        user_id: str | None = None,
    ) -> str:
        """Note a fact on `user_id`'s page (None: the household's).

        Returns the tool's answer (`error: ...` on refusal).
        """
        day = day or dt_util.now().date().isoformat()
        try:
            written, added = await self.async_write(
                lambda connection, now: pages.remember(
                    connection,
                    page,
                    fact,
                    day,
                    now,
                    author=author,
                    kind=kind,
                    source=source,
                    user_id=user_id,
                )
            )
        except PageError as err:
            return f"error: {err}"
        except StoreError as err:
            return f"error: memory is not available ({err.kind})"
        if not added:
            return f"Already noted on {written.name} today."
        over = (
            f" The profile is over its budget ({self.profile_tokens} of "
            f"{self.profile_budget} tokens); the nightly pass will tidy it."
            if written.is_profile
            and written.user_id is None
            and self.profile_tokens > self.profile_budget
            else ""
        )
        return f"Noted on {written.name}: {note_line(day, fact)}{over}"

    async def async_forget(self, page: str, fact: str, user_id: str | None) -> str:
        """Forget a fact on the asker's own page; return the tool's answer."""
        if user_id is None:
            return (
                "error: only a known person forgets, on their own pages; the"
                " household's pages are edited in the Assistant panel"
            )
        try:
            written, removed = await self.async_write(
                lambda connection, now: pages.forget_fact(
                    connection, page, fact, now, user_id
                )
            )
        except PageError as err:
            return f"error: {err}"
        except StoreError as err:
            return f"error: memory is not available ({err.kind})"
        return f"Forgot {removed} line(s) on {written.name}."

    async def async_recall(self, query: str, user_id: str | None = None) -> str:
        """Return the tool's answer: the pages `user_id` reads that match, bounded."""
        try:
            found, more = await self.async_read(
                lambda connection: recall(connection, query, user_id)
            )
        except PageError as err:
            return f"error: {err}"
        except StoreError as err:
            return f"error: memory is not available ({err.kind})"
        return recall_text(found, more)

    async def async_pages(self) -> tuple[list[Page], list[Page]]:
        """Return every owner's live and recently deleted pages (the panel's)."""
        return await self.async_read(lambda connection: list_pages(connection, CURATOR))

    def usage(self) -> dict[str, Any]:
        """The profile's size against its budget."""
        return {
            "used_tokens": self.profile_tokens,
            "budget_tokens": self.profile_budget,
            "over_budget": self.profile_tokens > self.profile_budget,
        }


def _context(connection: sqlite3.Connection) -> tuple[dict[str | None, str], int]:
    contexts: dict[str | None, str] = {
        None: build_context(connection),
        NO_PAGES: build_context(connection, NO_PAGES),
    }
    for user_id in owners_with_pages(connection):
        contexts[user_id] = build_context(connection, user_id)
    return contexts, profile_usage(connection)
