"""Wake-on-LAN of a llama-server's machine, with Home Assistant's wake_on_lan library."""

from dataclasses import dataclass
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

    async def async_wake(self) -> bool:
        """Send the packet unless one went out in the last WAKE_INTERVAL; True if sent."""
        now = self.hass.loop.time()
        if self._sent_at is not None and now - self._sent_at < WAKE_INTERVAL:
            return False
        self._sent_at = now
        try:
            await self.hass.async_add_executor_job(self._send)
        except (OSError, ValueError) as err:
            _LOGGER.warning("Cannot send the magic packet to %s: %s", self.mac, err)
            return False
        _LOGGER.info("Sent the magic packet to %s", self.mac)
        return True

    def _send(self) -> None:
        wakeonlan.send_magic_packet(self.mac, ip_address=self.address, port=self.port)
