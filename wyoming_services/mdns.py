"""Announce a Wyoming server over mDNS, as Home Assistant's discovery expects."""

import logging
import socket

from zeroconf import Error as ZeroconfError, InterfaceChoice, IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

_LOGGER = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
MDNS_GROUP = "224.0.0.251"
ANY_ADDRESS = frozenset({"", "0.0.0.0"})


class AdvertError(Exception):
    """The service could not be announced (short message)."""


class WyomingAdvert:
    """A `_wyoming._tcp` service record, registered until `stop()`."""

    def __init__(self, name: str, host: str, port: int) -> None:
        self.name = name
        self.host = host
        self.port = port
        self._zeroconf: AsyncZeroconf | None = None

    async def start(self) -> None:
        """Register the service; HA's Wyoming integration then offers it."""
        try:
            address = _lan_address() if self.host in ANY_ADDRESS else self.host
            info = AsyncServiceInfo(
                SERVICE_TYPE,
                f"{self.name}.{SERVICE_TYPE}",
                addresses=[socket.inet_aton(address)],
                port=self.port,
            )
            # A server bound to one address is announced on that interface only.
            interfaces = InterfaceChoice.All if self.host in ANY_ADDRESS else [address]
            self._zeroconf = AsyncZeroconf(
                interfaces=interfaces, ip_version=IPVersion.V4Only
            )
            await self._zeroconf.async_register_service(info)
        except (OSError, ZeroconfError) as err:
            await self.stop()
            raise AdvertError(f"cannot announce {self.name!r}: {err}") from None
        _LOGGER.info(
            "announced as %r on %s:%d (zeroconf)", self.name, address, self.port
        )

    async def stop(self) -> None:
        """Send the goodbye packets and close the mDNS sockets."""
        if self._zeroconf is not None:
            await self._zeroconf.async_close()
            self._zeroconf = None


def _lan_address() -> str:
    """Return the address the host would send multicast from.

    Connecting a UDP socket only picks a route; no packet is sent.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((MDNS_GROUP, 1))
        return str(probe.getsockname()[0])
