"""Whether a llama-server answers, kept by a background check, never by a question.

llama-server's `GET /health` answers 200 when its model is loaded and 503
while it loads. The check runs every HEALTH_INTERVAL seconds while the server
answers; while it does not, sooner and sooner apart (doubling from
HEALTH_RETRY); and at once when a question found the server down. When the
server becomes reachable its model (`GET /v1/models`) is read, and at every
check `GET /props` (whether its template can call tools, among others), for
the agents' fallbacks, the panel and the `tool_calls` Repairs issue.
"""

import asyncio
from collections.abc import Callable
from datetime import datetime
import logging

from homeassistant.core import CALLBACK_TYPE, HassJob, HomeAssistant, callback
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.event import async_call_later
from homeassistant.util import dt as dt_util

from ..const import HEALTH_INTERVAL, HEALTH_RETRY
from .client import LlamaServerClient, LlamaServerError, NotOpenAICompatible
from .credentials import without_credentials
from .reported import MAX_ERROR, ServerProps, server_props, storable_text

_LOGGER = logging.getLogger(__name__)

# Sent on every change of any server's health.
SIGNAL_HEALTH = "desktop_assistant_server_health"


class ServerHealth:
    """The health of one llama-server entry's server, as last checked.

    `reachable` is None until the first check ends; `since` is when it last
    changed. `last_error` is credential-free. Listeners are called whenever
    any of it changes.
    """

    def __init__(self, hass: HomeAssistant, client: LlamaServerClient) -> None:
        """Know nothing yet; nothing is checked until `async_start`."""
        self.hass = hass
        self.client = client
        self.reachable: bool | None = None
        self.since: datetime | None = None
        self.model: str | None = None
        self.props: ServerProps | None = None
        self.last_timings: dict[str, int | float | None] | None = None
        self.last_error: str | None = None
        self._listeners: list[Callable[[], None]] = []
        self._retry = HEALTH_RETRY
        self._next_check: CALLBACK_TYPE | None = None
        self._check: asyncio.Task[LlamaServerError | None] | None = None
        self._stopped = False
        self._job = HassJob(self._async_scheduled, cancel_on_shutdown=True)

    @callback
    def async_add_listener(self, listener: Callable[[], None]) -> CALLBACK_TYPE:
        """Call `listener()` on every change; return what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @callback
    def async_stop(self) -> None:
        """Stop checking (the entry unloads)."""
        self._stopped = True
        if self._next_check is not None:
            self._next_check()
            self._next_check = None
        if self._check is not None:
            self._check.cancel()

    @callback
    def async_failed(self, err: LlamaServerError) -> None:
        """A question found the server down: it is, and it is checked again at once."""
        self._set_reachable(False, err)
        self.async_check_soon()

    @callback
    def async_answered(self, timings: dict[str, int | float] | None = None) -> None:
        """A question was answered: the server is up; keep its checked timings."""
        if timings is not None:
            self.last_timings = {
                key: timings.get(key)
                for key in ("prompt_n", "cache_n", "predicted_per_second")
            }
        if self.reachable is not True:
            self._set_reachable(True, None)
            self.async_check_soon()
        elif timings is not None:
            self._notify()

    @callback
    def async_check_soon(self) -> None:
        """Check in the background now, unless a check is running."""
        if self._stopped or (self._check is not None and not self._check.done()):
            return
        self._check = self.hass.async_create_background_task(
            self._async_check(), f"check llama-server {self._where}"
        )

    async def async_check(self) -> LlamaServerError | None:
        """Check the server now, or wait for the check running; return the error.

        One check at a time, so there is one chain of next checks.
        """
        self.async_check_soon()
        if self._check is None or self._stopped:
            return None
        return await asyncio.shield(self._check)

    async def _async_check(self) -> LlamaServerError | None:
        """Check the server and schedule the next check; return the error."""
        if self._next_check is not None:
            self._next_check()
            self._next_check = None
        error = await self._async_probe()
        if not self._stopped:
            delay = HEALTH_INTERVAL if self.reachable else self._retry
            self._retry = (
                HEALTH_RETRY
                if self.reachable
                else min(self._retry * 2, HEALTH_INTERVAL)
            )
            self._next_check = async_call_later(self.hass, delay, self._job)
        return error

    @callback
    def _async_scheduled(self, _now: datetime) -> None:
        self._next_check = None
        self.async_check_soon()

    async def _async_probe(self) -> LlamaServerError | None:
        """GET /health; when it newly answers, its model and /props too.

        Behind a proxy without llama-server's /health (LiteLLM), the model
        list is the check.
        """
        try:
            try:
                await self.client.async_get_json("/health")
                proxied = False
            except NotOpenAICompatible:
                proxied = True
            if proxied or not self.reachable or self.model is None:
                models = await self.client.async_list_models()
                self.model = models[0] if models else None
            # Every check: a restart with another template can fall between two.
            props = await self._async_props()
        except LlamaServerError as err:
            # A refused key counts as down too: no question would get through.
            self._set_reachable(False, err)
            return err
        props_changed = props != self.props
        self.props = props
        self._set_reachable(True, None, props_changed)
        return None

    async def _async_props(self) -> ServerProps | None:
        """llama-server's GET /props (slots, context, tool calls), or None from others."""
        try:
            props = await self.client.async_get_json("/props")
        except LlamaServerError as err:
            _LOGGER.debug("No /props at %s: %s", self._where, err.kind)
            return None
        return server_props(props)

    def _set_reachable(
        self, reachable: bool, err: LlamaServerError | None, props_changed: bool = False
    ) -> None:
        error = (
            None
            if err is None
            else storable_text(without_credentials(str(err) or err.kind), MAX_ERROR)
        )
        changed = reachable != self.reachable
        if changed:
            self.since = dt_util.utcnow()
            if reachable:
                self._retry = HEALTH_RETRY
                _LOGGER.info("llama-server at %s answers", self._where)
            else:
                _LOGGER.warning(
                    "llama-server at %s does not answer: %s", self._where, error
                )
        self.reachable = reachable
        if changed or props_changed or error != self.last_error:
            self.last_error = error
            self._notify()

    @property
    def _where(self) -> str:
        return without_credentials(self.client.base_url)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()
        async_dispatcher_send(self.hass, SIGNAL_HEALTH)
