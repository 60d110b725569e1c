"""Memory as the integration uses it: the pages on the store, and what the model sees.

The prompt context is rebuilt in the same store job as every change, so the
tools API reads it without waiting and it stays byte-identical between
changes (the model's prompt cache holds).
"""

from collections.abc import Callable
import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Final

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import (
    CALLBACK_TYPE,
    HomeAssistant,
    ServiceCall,
    ServiceResponse,
    SupportsResponse,
    callback,
)
from homeassistant.util import dt as dt_util

from ..const import DOMAIN, SERVICE_RUN_NIGHTLY
from ..runtime import DATA_MEMORY, DATA_STORE
from ..store import Store, StoreError, transaction
from . import pages
from .pages import MemoryError, Page
from .text import note_line

if TYPE_CHECKING:
    from .nightly import NightlyPass

_LOGGER = logging.getLogger(__name__)

PROFILE_BUDGET: Final = 800


class Memory:
    """The household's pages in assistant.db."""

    def __init__(self, hass: HomeAssistant, store: Store) -> None:
        """Start with an empty context until `async_load`."""
        self.hass = hass
        self.store = store
        self.context = ""
        self.profile_tokens = 0
        self.profile_budget = PROFILE_BUDGET
        self._listeners: list[Callable[[], None]] = []
        self.nightly: NightlyPass

    async def async_load(self) -> None:
        """Read the context of what is stored."""
        self.context, self.profile_tokens = await self.store.async_run(_context)

    @callback
    def async_add_listener(self, listener: Callable[[], None]) -> CALLBACK_TYPE:
        """Call `listener` after every change of memory."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def async_write[T](self, work: Callable[[sqlite3.Connection, float], T]) -> T:
        """Run `work(connection, now)` in one transaction; refresh the context."""

        def job(connection: sqlite3.Connection) -> tuple[T, str, int]:
            with transaction(connection):
                result = work(connection, time.time())
            return result, *_context(connection)

        result, context, usage = await self.store.async_run(job)
        changed = context != self.context or usage != self.profile_tokens
        self.context, self.profile_tokens = context, usage
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
    ) -> str:
        """Note a fact on a page; return the tool's answer (`error: ...` on refusal)."""
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
                )
            )
        except MemoryError as err:
            return f"error: {err}"
        except StoreError as err:
            return f"error: memory is not available ({err.kind})"
        if not added:
            return f"Already noted on {written.name} today."
        over = (
            f" The profile is over its budget ({self.profile_tokens} of "
            f"{self.profile_budget} tokens); the nightly pass will tidy it."
            if written.is_profile and self.profile_tokens > self.profile_budget
            else ""
        )
        return f"Noted on {written.name}: {note_line(day, fact)}{over}"

    async def async_recall(self, query: str) -> str:
        """Return the tool's answer: the pages that match, bounded."""
        try:
            found, more = await self.async_read(
                lambda connection: pages.recall(connection, query)
            )
        except MemoryError as err:
            return f"error: {err}"
        except StoreError as err:
            return f"error: memory is not available ({err.kind})"
        return pages.recall_text(found, more)

    async def async_pages(self) -> tuple[list[Page], list[Page]]:
        """Return the live and the recently deleted pages."""
        return await self.async_read(pages.list_pages)

    def usage(self) -> dict[str, Any]:
        """The profile's size against its budget."""
        return {
            "used_tokens": self.profile_tokens,
            "budget_tokens": self.profile_budget,
            "over_budget": self.profile_tokens > self.profile_budget,
        }


def _context(connection: sqlite3.Connection) -> tuple[str, int]:
    return pages.build_context(connection), pages.profile_usage(connection)


async def async_setup_memory(hass: HomeAssistant) -> Memory | None:
    """Make memory available when the store opened, with its nightly pass."""
    # These modules import this one.
    from .nightly import NightlyPass  # noqa: PLC0415
    from .websocket import async_register_commands  # noqa: PLC0415

    store = hass.data[DATA_STORE]
    if not store.available:
        return None
    memory = Memory(hass, store)
    try:
        await memory.async_load()
    except StoreError:
        return None
    memory.nightly = NightlyPass(hass, memory)
    hass.data[DATA_MEMORY] = memory
    async_register_commands(hass, memory)

    async def run_nightly(call: ServiceCall) -> ServiceResponse:
        return await memory.nightly.async_run("action")

    hass.services.async_register(
        DOMAIN,
        SERVICE_RUN_NIGHTLY,
        run_nightly,
        supports_response=SupportsResponse.OPTIONAL,
    )
    return memory


@callback
def async_schedule_nightly(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """Schedule the nightly pass by a loaded entry's options."""
    if (memory := hass.data.get(DATA_MEMORY)) is not None:
        memory.nightly.async_schedule(entry)
        entry.async_on_unload(memory.nightly.async_stop)
