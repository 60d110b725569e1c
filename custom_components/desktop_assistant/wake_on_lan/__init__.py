"""Wake-on-LAN of a sleeping machine: one behaviour for the integration and the relay.

Nothing of Home Assistant here. The integration (installed by HACS) imports
this package as its own; the whisper relay's package, which cannot import
the integration, ships the same file as `desktop_assistant_wake_on_lan`
(pyproject.toml maps it), so the two send alike: with Home Assistant's
wake_on_lan library, at most once per WAKE_INTERVAL, and a packet counts as
sent only once it was sent, so a send that failed is tried again at once.
"""

from collections.abc import Callable
import logging
import time
from typing import Final

import wakeonlan

_LOGGER = logging.getLogger(__name__)

# A sleeping desktop takes seconds to wake; one packet per half minute is
# plenty and keeps a burst of questions from flooding the network.
WAKE_INTERVAL: Final = 30.0


class Waker:
    """Sends the magic packet for one machine, at most once per WAKE_INTERVAL."""

    def __init__(
        self,
        mac: str,
        address: str,
        port: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Wake `mac` by a packet to `address`:`port`; `clock` counts seconds."""
        self.mac = mac
        self.address = address
        self.port = port
        self._clock = clock
        self._sent_at: float | None = None

    def due(self) -> bool:
        """Whether no packet went out in the last WAKE_INTERVAL."""
        return self._sent_at is None or self._clock() - self._sent_at >= WAKE_INTERVAL

    def wake(self) -> bool:
        """Send the packet unless one went out recently; True if it was sent.

        Blocking (a UDP send): the integration runs it in an executor.
        """
        if not self.due():
            return False
        try:
            wakeonlan.send_magic_packet(
                self.mac, ip_address=self.address, port=self.port
            )
        except (OSError, ValueError) as err:
            _LOGGER.warning(
                "Cannot send the magic packet to %s at %s:%d: %s",
                self.mac,
                self.address,
                self.port,
                err,
            )
            return False
        self._sent_at = self._clock()
        _LOGGER.info(
            "Sent the magic packet to %s at %s:%d", self.mac, self.address, self.port
        )
        return True
