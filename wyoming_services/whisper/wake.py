"""Wake-on-LAN for the machine of the first whisper-server.

It behaves as the integration's waker (custom_components/desktop_assistant/
server/wake.py), which this pip-installed package cannot import: the same
library, the same interval, and a packet counts as sent only once it was
sent. tests/test_wake_on_lan_alike.py holds the two to that.
"""

import logging
import time

import wakeonlan

_LOGGER = logging.getLogger(__name__)

# A sleeping desktop takes seconds to wake; one packet per half minute is plenty
# and keeps a question burst from flooding the network. The integration's
# const.WAKE_INTERVAL is the same.
WAKE_INTERVAL = 30.0


class Waker:
    """Sends the magic packet for one MAC, at most once per `WAKE_INTERVAL`."""

    def __init__(self, mac: str, address: str, port: int) -> None:
        self.mac = mac
        self.address = address
        self.port = port
        self._sent_at: float | None = None

    def wake(self) -> bool:
        """Send the packet unless one went out recently; True if it was sent."""
        now = time.monotonic()
        if self._sent_at is not None and now - self._sent_at < WAKE_INTERVAL:
            return False
        try:
            # The same library as the integration's Wake-on-LAN (HA's own).
            wakeonlan.send_magic_packet(
                self.mac, ip_address=self.address, port=self.port
            )
        except (OSError, ValueError) as err:
            _LOGGER.warning(
                "cannot send Wake-on-LAN to %s:%d: %s", self.address, self.port, err
            )
            return False
        self._sent_at = now
        _LOGGER.info(
            "sent Wake-on-LAN for %s to %s:%d", self.mac, self.address, self.port
        )
        return True
