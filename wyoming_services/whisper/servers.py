"""Several whisper-servers in order: a question goes to the first that is up.

A server is down when it refuses the connection, does not accept it or answer
`/health` within the connect timeout, or answers 503 (model loading). Any
other fault is the server's answer and is passed on, not failed over. A
background check keeps each server's state, so that a question never waits
for a server already known to be down.
"""

import asyncio
from collections.abc import Sequence
import contextlib
import ipaddress
import logging

import aiohttp

from desktop_assistant_wake_on_lan import Waker

from .client import Transcription, WhisperClient, WhisperServerDownError

_LOGGER = logging.getLogger(__name__)

CHECK_INTERVAL = 10.0  # seconds between background checks of every server


class WhisperServers:
    """The configured whisper-servers, their health, and failover between them."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        urls: Sequence[str],
        timeout: float,
        connect_timeout: float,
        *,
        waker: Waker | None = None,
        wake_from: Sequence[str] = (),
        check_interval: float = CHECK_INTERVAL,
    ) -> None:
        self.clients = [
            WhisperClient(session, url, timeout, connect_timeout) for url in urls
        ]
        # None: not checked yet, so a question may try it.
        self.up: dict[str, bool | None] = dict.fromkeys(urls)
        self._faults: dict[str, str] = {}  # why each server is down
        self._waker = waker
        self._wake_from = [ipaddress.ip_network(n, strict=False) for n in wake_from]
        self._check_interval = check_interval
        self._check_now = asyncio.Event()
        self.checks = 0  # rounds of background checks done, for tests to wait on
        self._checked = asyncio.Condition()
        self._task: asyncio.Task | None = None

    @property
    def urls(self) -> list[str]:
        """The servers, in the order questions try them."""
        return [client.url for client in self.clients]

    @property
    def shown(self) -> str:
        """The servers as logs show them: in order, without credentials."""
        return ", ".join(client.shown for client in self.clients)

    async def start(self) -> None:
        """Check every server once, log which are unreachable, keep checking."""
        await self.check_all()
        if not any(self.up.values()):
            _LOGGER.warning(
                "no whisper-server answers (%s); questions fail until one does",
                self.shown,
            )
        self._task = asyncio.create_task(self._keep_checking(), name="whisper checks")

    async def stop(self) -> None:
        """End the background checks."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def check_all(self) -> None:
        """Check every server at once; log each change of state."""
        results = await asyncio.gather(
            *(self._check(client) for client in self.clients)
        )
        for client, fault in zip(self.clients, results, strict=True):
            self._mark(client, fault)
        async with self._checked:
            self.checks += 1
            self._checked.notify_all()

    async def wait_checks(self, count: int) -> None:
        """Return once `count` rounds of checks have been done in all."""
        async with self._checked:
            await self._checked.wait_for(lambda: self.checks >= count)

    async def transcribe(
        self, wav: bytes, language: str, client: str | None = None
    ) -> Transcription:
        """Transcribe with the first server that is up; fail over only when down.

        Servers known to be down are skipped while another may answer; when
        every one is known down they are all tried, since a question has
        nowhere else to go and one may just have come back. `client` (its IP
        address) may wake the first server's machine if wake_from lets it.
        """
        faults = []
        candidates = [c for c in self.clients if self.up[c.url] is not False]
        if self.up[self.urls[0]] is False:
            self._wake(client)
        for server in candidates or self.clients:
            try:
                result = await _transcribe_watched(server, wav, language)
            except WhisperServerDownError as err:
                self._mark(server, str(err))
                self._check_now.set()
                faults.append(str(err))
                if server is self.clients[0]:
                    self._wake(client)
                continue
            self._mark(server, None)
            return result
        if len(faults) == 1:
            raise WhisperServerDownError(faults[0])
        raise WhisperServerDownError(f"no whisper-server answers: {'; '.join(faults)}")

    def _wake(self, client: str | None) -> None:
        """A question found the first server down: wake its machine.

        Only a question does: a check waking it would keep a desktop that
        went to sleep from ever staying asleep. The Waker sends at most one
        packet per WAKE_INTERVAL, however many clients ask.
        """
        if self._waker is None:
            return
        if not self._may_wake(client):
            _LOGGER.info(
                "not waking %s: the question came from %s, which whisper.wake_from "
                "does not list",
                self._waker.mac,
                client,
            )
            return
        self._waker.wake()

    def _may_wake(self, client: str | None) -> bool:
        """Any client may when wake_from is empty; stdio and Unix sockets are local."""
        if not self._wake_from or client is None:
            return True
        try:
            address = ipaddress.ip_address(client)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        return any(address in network for network in self._wake_from)

    async def _keep_checking(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._check_interval):
                    await self._check_now.wait()
            self._check_now.clear()
            await self.check_all()

    @staticmethod
    async def _check(client: WhisperClient) -> str | None:
        """None when the server is up, else why it is not."""
        try:
            await client.check()
        except WhisperServerDownError as err:
            return str(err)
        return None

    def _mark(self, client: WhisperClient, fault: str | None) -> None:
        was_up = self.up[client.url]
        self.up[client.url] = fault is None
        if fault is not None:
            self._faults[client.url] = fault
            if was_up is not False:
                _LOGGER.warning("%s", fault)
        elif was_up is not True:
            _LOGGER.info("whisper-server at %s is up", client.shown)


async def _transcribe_watched(
    client: WhisperClient, wav: bytes, language: str
) -> Transcription:
    """Transcribe, while `/health` shows within the connect timeout it is there.

    whisper-server sends its headers only once it has transcribed, so a
    server that accepts and never answers is told from a slow transcription
    by its health check.
    """
    post = asyncio.ensure_future(client.transcribe(wav, language))
    probe = asyncio.ensure_future(client.check())
    try:
        await asyncio.wait({post, probe}, return_when=asyncio.FIRST_COMPLETED)
        if not post.done() and probe.exception() is not None:
            raise probe.exception()  # type: ignore[misc]
        return await post
    finally:
        for task in (post, probe):
            task.cancel()
        await asyncio.gather(post, probe, return_exceptions=True)
