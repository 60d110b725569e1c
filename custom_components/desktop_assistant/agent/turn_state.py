"""What one question has done so far across its rounds."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.failover import Route

_LOGGER = logging.getLogger(__name__)


async def _async_nothing_to_announce(
    tool_names: list[str], language: str | None
) -> str | None:
    """A turn without tools to announce: an AI task's."""
    return None


@dataclass
class Turn:
    """What one question has done so far across its rounds."""

    language: str | None
    # Picks the phrase to say for the tools about to run (names, language).
    announce: Callable[[list[str], str | None], Awaitable[str | None]] = (
        _async_nothing_to_announce
    )
    announced: bool = False
    fault: str | None = None
    # What the person heard about the fault; the record splits it off the reply.
    fault_sentence: str | None = None
    # Whether any text of the turn has been streamed (the person saw it).
    spoke: bool = False
    # Text of the reply being streamed that the chat log does not hold yet:
    # a stopped turn's record keeps it, marked interrupted.
    unfinished: str = ""
    # The model's reply said instead as a fault (it repeated a tool's own
    # words): the record keeps it before the fault.
    withheld: str = ""
    timings: list[dict[str, Any]] = field(default_factory=list)
    # Event loop time by which the turn must be answered.
    deadline: float | None = None
    # Tool call ids given out in this turn.
    call_ids: set[str] = field(default_factory=set)
    # The servers the turn's requests go to, and which answered.
    route: Route | None = None

    def record_timings(self, timings: dict[str, Any]) -> None:
        """Keep llama-server's timings of a round for the trace, and log them."""
        self.timings.append(timings)
        _LOGGER.debug(
            "llama-server timings: prompt_n=%s cache_n=%s predicted_per_second=%s",
            timings.get("prompt_n"),
            timings.get("cache_n"),
            timings.get("predicted_per_second"),
        )
