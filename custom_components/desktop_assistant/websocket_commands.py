"""How the panel's websocket commands answer, written once for every feature.

A command is a module-level function under `admin_command(schema)`, as in
Home Assistant core's `assist_pipeline/websocket_api.py`, that returns its
result instead of sending it. A refusal is raised: `Refused` with its code,
or the feature's own error that carries a `code` (memory's `PageError`); a
`StoreError` answers `unavailable`. Every code has a sentence under
`panel.errors` in the translations.
"""

from collections.abc import Awaitable, Callable
import functools
import inspect
from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.core import HomeAssistant, callback

from .store import StoreError

ERR_UNAVAILABLE: Final = "unavailable"
ERR_IN_PROGRESS: Final = "in_progress"

type Message = dict[str, Any]
type AsyncAnswer = Callable[
    [HomeAssistant, websocket_api.ActiveConnection, Message], Awaitable[Any]
]
type InstantAnswer = Callable[
    [HomeAssistant, websocket_api.ActiveConnection, Message], Any
]


class Refused(Exception):
    """A command that cannot be done: the panel shows the sentence of `code`."""

    def __init__(self, code: str, message: str) -> None:
        """Keep the code the error answer carries."""
        super().__init__(message)
        self.code = code


def admin_command(
    schema: dict[Any, Any], *, coded: tuple[type[Exception], ...] = ()
) -> Callable[[AsyncAnswer | InstantAnswer], websocket_api.WebSocketCommandHandler]:
    """An answer as an admin-only command; its result or refusal is sent.

    An `async def` answer runs as a task; a plain function answers at once in
    the event loop, so it only reads what is in memory and never refuses.
    `coded` are the feature's error types that carry their own `code`.
    """
    return _commands(schema, coded, admin_only=True)


def user_command(
    schema: dict[Any, Any], *, coded: tuple[type[Exception], ...] = ()
) -> Callable[[AsyncAnswer | InstantAnswer], websocket_api.WebSocketCommandHandler]:
    """An answer as a command of any signed-in user, as `admin_command` otherwise.

    The answer itself decides what the user (`connection.user`) may see.
    """
    return _commands(schema, coded, admin_only=False)


def _commands(
    schema: dict[Any, Any], coded: tuple[type[Exception], ...], *, admin_only: bool
) -> Callable[[AsyncAnswer | InstantAnswer], websocket_api.WebSocketCommandHandler]:
    def register(
        answer: AsyncAnswer | InstantAnswer,
    ) -> websocket_api.WebSocketCommandHandler:
        if inspect.iscoroutinefunction(answer):
            handler = websocket_api.async_response(_sending(answer, coded))
        else:
            handler = callback(_sending_at_once(answer))
        if admin_only:
            handler = websocket_api.require_admin(handler)
        return websocket_api.websocket_command(schema)(handler)

    return register


def _sending(
    answer: AsyncAnswer, coded: tuple[type[Exception], ...]
) -> websocket_api.AsyncWebSocketCommandHandler:
    """Send the answer's result, or its refusal or StoreError as an error."""
    refusals = (Refused, *coded)

    @functools.wraps(answer)
    async def handler(
        hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: Message
    ) -> None:
        try:
            result = await answer(hass, connection, msg)
        except refusals as err:
            connection.send_error(msg["id"], err.code, str(err))
            return
        except StoreError as err:
            connection.send_error(msg["id"], ERR_UNAVAILABLE, str(err))
            return
        connection.send_result(msg["id"], result)

    return handler


def _sending_at_once(answer: InstantAnswer) -> websocket_api.WebSocketCommandHandler:
    """Send the answer's result, in the event loop."""

    @functools.wraps(answer)
    def handler(
        hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: Message
    ) -> None:
        connection.send_result(msg["id"], answer(hass, connection, msg))

    return handler
