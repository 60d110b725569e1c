"""Wake-on-LAN of a llama-server's machine, as the whisper relay wakes its own.

The behaviour is the shared `wake_on_lan` package's; here it only runs off
the event loop, and questions that find the server down at the same moment
send one packet, not several.
"""

import asyncio

from homeassistant.core import HomeAssistant

from .. import wake_on_lan


class Waker(wake_on_lan.Waker):
    """The shared waker of one llama-server's machine, for Home Assistant."""

    def __init__(
        self, hass: HomeAssistant, mac: str, address: str, port: int, wait: float = 0.0
    ) -> None:
        """Wake `mac`; a question may wait `wait` seconds for it (0: never wait)."""
        super().__init__(mac, address, port, clock=hass.loop.time)
        self.hass = hass
        self.wait = wait
        self._sending = asyncio.Lock()

    async def async_wake(self) -> bool:
        """Send the packet unless one went out in the last WAKE_INTERVAL; True if sent."""
        async with self._sending:
            if not self.due():
                return False
            return await self.hass.async_add_executor_job(self.wake)
