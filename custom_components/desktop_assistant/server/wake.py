"""Wake-on-LAN of a llama-server's machine, with Home Assistant's wake_on_lan library.

It behaves as the whisper relay's waker (wyoming_services/whisper/wake.py):
the same library, the same WAKE_INTERVAL, and a packet counts as sent only
once it was sent, so a failed send is tried again by the next question.
"""

import asyncio
from dataclasses import dataclass, field
import logging

from homeassistant.core import HomeAssistant
import wakeonlan

from ..const import WAKE_INTERVAL

_LOGGER = logging.getLogger(__name__)


@dataclass
class Waker:
    """Sends the magic packet for one machine, at most once per WAKE_INTERVAL."""

    hass: HomeAssistant
    mac: str
    address: str
    port: int
    # Seconds a question may wait for the woken server; 0: never wait.
    wait: float = 0.0
    _sent_at: float | None = None
    # Questions that find the server down at once send one packet, not several.
    _sending: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    async def async_wake(self) -> bool:
        """Send the packet unless one went out in the last WAKE_INTERVAL; True if sent."""
        async with self._sending:
            now = self.hass.loop.time()
            if self._sent_at is not None and now - self._sent_at < WAKE_INTERVAL:
                return False
            try:
                await self.hass.async_add_executor_job(self._send)
            except (OSError, ValueError) as err:
                _LOGGER.warning("Cannot send the magic packet to %s: %s", self.mac, err)
                return False
            self._sent_at = now
        _LOGGER.info("Sent the magic packet to %s", self.mac)
        return True

    def _send(self) -> None:
        wakeonlan.send_magic_packet(self.mac, ip_address=self.address, port=self.port)
