"""Which llama-server answers a question: the agent's own, else a fallback.

The order is decided from the servers' health without any I/O: a server
known to be down goes last, never first. A request fails over to the next
server only when ServerUnavailable says the server was not there (refused,
no headers within its connect timeout, 503); any other fault is the
server's answer. A conversation stays on the server that answered it while
that server is healthy, since that server's prompt cache holds it.
"""

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant, callback

from ..const import CONF_FALLBACK_SERVERS, CONF_PREFER_OWN_SERVER, DOMAIN
from ..runtime import DATA_STICKY, DesktopAssistantConfigEntry, ServerRuntime
from .client import LlamaServerClient, ServerUnavailable
from .health import ServerHealth
from .stream import timings_of

# Conversations whose server is remembered; the oldest are forgotten first.
MAX_STICKY = 1024
# While a question waits for a woken server, its health is checked this often.
WAKE_CHECK_EVERY = 1.0


@dataclass(frozen=True, slots=True)
class Server:
    """One server a question may go to, with the model asked for there."""

    entry: DesktopAssistantConfigEntry
    model: str
    # The entry's client, health and waker, kept from when the route was
    # made: a reload while a question runs deletes `entry.runtime_data`.
    runtime: ServerRuntime = field(init=False)

    def __post_init__(self) -> None:
        """Keep the entry's runtime for the whole question."""
        object.__setattr__(self, "runtime", self.entry.runtime_data)

    @property
    def client(self) -> LlamaServerClient:
        """The server's client."""
        return self.runtime.client

    @property
    def name(self) -> str:
        """The entry's title: the server as the person named it (credential-free)."""
        return self.entry.title


class StickyServers:
    """The server entry that last answered each conversation, for so many."""

    def __init__(self) -> None:
        """Remember nothing yet."""
        self._servers: OrderedDict[str, str] = OrderedDict()

    def get(self, conversation_id: str | None) -> str | None:
        """The entry id that answered the conversation, if remembered."""
        return None if conversation_id is None else self._servers.get(conversation_id)

    def set(self, conversation_id: str, entry_id: str) -> None:
        """Remember the entry that answered; forget the oldest beyond MAX_STICKY."""
        self._servers[conversation_id] = entry_id
        self._servers.move_to_end(conversation_id)
        while len(self._servers) > MAX_STICKY:
            self._servers.popitem(last=False)


@callback
def async_sticky_servers(hass: HomeAssistant) -> StickyServers:
    """Return the integration's one memory of which server answered what."""
    if (sticky := hass.data.get(DATA_STICKY)) is None:
        sticky = hass.data[DATA_STICKY] = StickyServers()
    return sticky


def fallback_model(entry: DesktopAssistantConfigEntry) -> str:
    """The model asked for on a fallback: its own agents', else the one it reports.

    A server in router mode (or behind llama-swap) serves several models:
    the fallback entry's agent says which one is meant.
    """
    agents = sorted(
        entry.subentries.values(), key=lambda sub: sub.subentry_type != "conversation"
    )
    models = [sub.data.get(CONF_MODEL) for sub in agents]
    return next(
        (model for model in models if model), entry.runtime_data.health.model or ""
    )


def loaded_fallbacks(
    hass: HomeAssistant, own: DesktopAssistantConfigEntry, entry_ids: Iterable[str]
) -> list[Server]:
    """The loaded entries among `entry_ids`, in order, without `own`."""
    servers = []
    for entry_id in entry_ids:
        entry = hass.config_entries.async_get_entry(entry_id)
        if (
            entry is None
            or entry.domain != DOMAIN
            or entry.entry_id == own.entry_id
            or entry.state is not ConfigEntryState.LOADED
        ):
            continue
        servers.append(Server(entry, fallback_model(entry)))
    return servers


@dataclass
class Route:
    """The servers one question tries, in order, and the one that answered."""

    hass: HomeAssistant
    # The agent's own server, and every server in the order they are tried.
    own: Server
    servers: list[Server]
    conversation_id: str | None = None
    # The agent's option: wait for its own woken server even with a fallback up.
    prefer_own: bool = False
    answered: Server | None = None
    # What the last answer's final chunk said of its speed.
    timings: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def tried(self) -> str:
        """The server that answered, else the last one tried (its entry's title)."""
        return (self.answered or self.servers[-1]).name

    async def async_stream_chat(
        self,
        payload: dict[str, Any] | Callable[[Server], dict[str, Any]],
        read_timeout: float,
        deadline: float | None,
    ) -> AsyncIterator[dict[str, Any] | None]:
        """Stream the answer of the first server that is there.

        ServerUnavailable comes before any chunk, so failing over never
        repeats or mixes text. When every server is down the last one's
        ServerUnavailable is raised: the agent's fault sentence. A payload
        given as a function is made for each server tried (its template
        decides how tools are asked for).
        """
        error: ServerUnavailable | None = None
        for server in self.servers:
            body = payload(server) if callable(payload) else payload
            try:
                async for chunk in server.client.async_stream_chat(
                    body | {"model": server.model}, read_timeout, deadline
                ):
                    self._answered_by(server, chunk)
                    yield chunk
            except ServerUnavailable as err:
                server.runtime.health.async_failed(err)
                self.async_wake(server)
                error = err
                continue
            server.runtime.health.async_answered(self.timings)
            # The turn's next rounds go where its tool calls were made.
            self._put_first(server)
            return
        raise error or ServerUnavailable("no llama-server to ask")

    def _answered_by(self, server: Server, chunk: dict[str, Any] | None) -> None:
        if self.answered is not server:
            self.answered = server
            if self.conversation_id is not None:
                async_sticky_servers(self.hass).set(
                    self.conversation_id, server.entry.entry_id
                )
        if chunk is not None and (timings := timings_of(chunk)) is not None:
            self.timings = timings

    @callback
    def async_wake(self, server: Server) -> None:
        """Send the server's machine its magic packet, in the background."""
        if (waker := server.runtime.waker) is not None:
            self.hass.async_create_background_task(
                waker.async_wake(), f"wake {server.name}"
            )

    def server_to_wake(self) -> Server | None:
        """The agent's own server when the question should wait for it to wake.

        That is when it is down, has a wake wait, and no other server is up
        or the agent prefers its own server (then the fallbacks answer only
        if it does not come up in time).
        """
        own = self.own
        waker = own.runtime.waker
        if (
            own not in self.servers  # left out: it cannot answer this request
            or waker is None
            or waker.wait <= 0
            or own.runtime.health.reachable is not False
        ):
            return None
        if self.prefer_own:
            return own
        if any(s.runtime.health.reachable for s in self.servers if s is not own):
            return None
        return own

    async def async_wait_for(self, server: Server) -> bool:
        """Wake the server and wait up to its wake wait for it; True if it came up.

        It goes first in the order then, with its entry's runtime of now: a
        reload during the wait made a new client, health and waker.
        """
        assert server.runtime.waker is not None
        self.async_wake(server)
        runtime = await async_wait_until_entry_reachable(
            self.hass, server.entry, server.runtime.waker.wait
        )
        if runtime is None:
            return False
        if runtime is not server.runtime:
            current = Server(server.entry, server.model)
            self.servers = [current if s is server else s for s in self.servers]
            if self.own is server:
                self.own = current
            server = current
        self._put_first(server)
        return True

    def _put_first(self, server: Server) -> None:
        """Ask `server` first, if the route asks it at all."""
        if server in self.servers:
            self.servers = [server, *(s for s in self.servers if s is not server)]


async def async_wait_until_reachable(
    hass: HomeAssistant, health: ServerHealth, wait: float
) -> bool:
    """Check the server every WAKE_CHECK_EVERY s until it is up; False after `wait` s."""
    came_up = asyncio.Event()
    unsubscribe = health.async_add_listener(
        lambda: came_up.set() if health.reachable else None
    )
    deadline = hass.loop.time() + wait
    try:
        while not health.reachable and (left := deadline - hass.loop.time()) > 0:
            health.async_check_soon()
            try:
                async with asyncio.timeout(min(WAKE_CHECK_EVERY, left)):
                    await came_up.wait()
            except TimeoutError:
                continue
    finally:
        unsubscribe()
    return bool(health.reachable)


async def async_wait_until_entry_reachable(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry, wait: float
) -> ServerRuntime | None:
    """The entry's runtime once its server is up; None after `wait` s or once removed.

    Each WAKE_CHECK_EVERY s the entry's current runtime is watched, so a
    reload during the wait is followed rather than its stopped health.
    """
    deadline = hass.loop.time() + wait
    while (left := deadline - hass.loop.time()) > 0:
        if hass.config_entries.async_get_entry(entry.entry_id) is not entry:
            return None
        step = min(WAKE_CHECK_EVERY, left)
        if entry.state is not ConfigEntryState.LOADED:
            # Between the unload and the setup of a reload.
            await asyncio.sleep(step)
            continue
        runtime = entry.runtime_data
        if await async_wait_until_reachable(hass, runtime.health, step):
            return runtime
    return None


@callback
def async_route(
    hass: HomeAssistant,
    entry: DesktopAssistantConfigEntry,
    options: dict[str, Any],
    conversation_id: str | None = None,
) -> Route:
    """The servers a question of an agent (its options) goes to, in order.

    First the server that answered the conversation, while it is up; then
    the agent's own server and its fallbacks in order, those known to be
    down last. No server is asked anything here.
    """
    own = Server(entry, options[CONF_MODEL])
    servers = [own, *loaded_fallbacks(hass, entry, options[CONF_FALLBACK_SERVERS])]
    sticky_id = async_sticky_servers(hass).get(conversation_id)
    servers.sort(
        key=lambda server: (
            not (
                server.entry.entry_id == sticky_id and server.runtime.health.reachable
            ),
            server.runtime.health.reachable is False,
        )
    )
    route = Route(
        hass,
        own,
        servers,
        conversation_id,
        prefer_own=bool(options.get(CONF_PREFER_OWN_SERVER)),
    )
    if own.runtime.health.reachable is False:
        route.async_wake(own)
    return route
