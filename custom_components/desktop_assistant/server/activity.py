"""Whether a conversation is talking to llama-server now, so background work goes second."""

import asyncio
from collections.abc import Iterator
import contextlib

from homeassistant.core import HomeAssistant, callback

from ..runtime import DATA_ACTIVITY


class ServerActivity:
    """Whether a conversation is talking to llama-server right now.

    Background work waits while `idle` is clear and withdraws a request in
    flight when `busy` is set, so a question does not queue behind it on a
    server with one slot.
    """

    def __init__(self) -> None:
        """Start idle."""
        self._turns = 0
        self.idle = asyncio.Event()
        self.idle.set()
        self.busy = asyncio.Event()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Mark a conversation turn as running for the duration of the block."""
        self._turns += 1
        self.idle.clear()
        self.busy.set()
        try:
            yield
        finally:
            self._turns -= 1
            if not self._turns:
                self.busy.clear()
                self.idle.set()


@callback
def async_get_activity(hass: HomeAssistant) -> ServerActivity:
    """Return the integration's one record of conversation activity."""
    if (activity := hass.data.get(DATA_ACTIVITY)) is None:
        activity = hass.data[DATA_ACTIVITY] = ServerActivity()
    return activity
