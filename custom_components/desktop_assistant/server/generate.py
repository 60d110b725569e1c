"""Text generation on llama-server for work outside a conversation.

The nightly pass's path: a chat request whose answer may be constrained to
JSON by a schema (llama-server's `response_format` with `json_schema`),
checked again on arrival, with typed failures and a retry for faults that
pass. `async_attempts` is the one retry policy of every generation, the
nightly pass's and the `ai_task` entity's (which runs through the agent's
loop, with what it expects, `Expected`, checked by the same rules): a fault
that may pass is tried again, and work that yields to conversations waits
for them and withdraws a request one interrupts.
"""

import asyncio
from collections.abc import Awaitable, Callable
import contextlib
from dataclasses import dataclass
import json
import logging
from typing import Any, Literal

from homeassistant.helpers import llm
import probatio as vol

from ..clock import monotonic_seconds
from ..const import CHARS_PER_TOKEN
from .activity import ServerActivity
from .client import (
    CannotConnect,
    InvalidAuth,
    LlamaServerClient,
    LlamaServerError,
    ServerFailed,
    ServerTimeout,
    StreamCut,
    UnreadableAnswer,
)
from .credentials import without_credentials
from .request import chat_payload
from .stream import Answer

_LOGGER = logging.getLogger(__name__)

DEFAULT_ATTEMPT_TIMEOUT = 120.0
DEFAULT_RETRIES = 2
DEFAULT_RETRY_WAIT = 1.0
# The longest answer accepted, in characters per token of `max_tokens`. A
# token averages CHARS_PER_TOKEN characters; eight times that leaves room for
# tokens of long words and runs of spaces, and an answer longer than this did
# not come from `max_tokens` tokens: it is refused before it is parsed.
ANSWER_CHARS_PER_TOKEN = 8 * CHARS_PER_TOKEN
# HTTP 503: llama-server is loading the model or has no free slot.
BUSY = 503


# How generating failed: the server could not be reached or stayed busy
# through the retries; it answered the request with an error; the answer was
# not what was asked for (not JSON, wrong shape, cut); an attempt took longer
# than allowed; the caller withdrew the request.
type GenerationKind = Literal[
    "unavailable", "refused", "invalid_output", "timeout", "cancelled"
]


class GenerationError(Exception):
    """Generating failed; `kind` says how, for logs, callers and their messages."""

    def __init__(self, kind: GenerationKind, message: str) -> None:
        """Keep the kind beside the message."""
        super().__init__(message)
        self.kind = kind


# Faults worth another attempt: the request may not have reached the model,
# or the server was busy loading or restarting.
TRANSIENT = (CannotConnect, StreamCut, UnreadableAnswer)


@dataclass(frozen=True, slots=True)
class Generation:
    """What came back: the answer and how it went."""

    data: Any
    attempts: int
    seconds: float
    # llama-server's token counts of the last attempt, when it sent them.
    timings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Reply:
    """One attempt's answer: its text and llama-server's timings."""

    text: str
    timings: dict[str, Any]


@dataclass(slots=True)
class Generator:
    """Generates text or JSON with one model of one llama-server."""

    client: LlamaServerClient
    model: str
    attempt_timeout: float = DEFAULT_ATTEMPT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    retry_wait: float = DEFAULT_RETRY_WAIT
    # Which slot to use (llama-server's `id_slot`), keeping the others'
    # cached prompts for conversations; None lets the server choose.
    slot: int | None = None
    # Conversations go first: wait for them to end, and withdraw and repeat a
    # request that one interrupts.
    yield_to: ServerActivity | None = None

    async def async_generate(
        self,
        messages: list[dict[str, Any]],
        *,
        structure: vol.Schema | None = None,
        name: str = "answer",
        max_tokens: int = 1024,
        temperature: float = 0.2,
        cancel: asyncio.Event | None = None,
    ) -> Generation:
        """Return the model's answer: text, or data valid for `structure`.

        Raises a GenerationError; faults of the connection are tried
        again `retries` times, `retry_wait` seconds apart and doubling.
        """
        expected = Expected(name, structure)
        payload = chat_payload(
            self.model,
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=expected.response_format(),
            slot=self.slot,
        )
        started = monotonic_seconds()
        reply, attempts = await self._async_attempts(payload, cancel)
        data = expected.parse(reply.text)
        seconds = monotonic_seconds() - started
        _LOGGER.debug(
            "Generated %s with %s in %.1f s (%d attempts), prompt_n=%s predicted_n=%s",
            name,
            self.model,
            seconds,
            attempts,
            reply.timings.get("prompt_n"),
            reply.timings.get("predicted_n"),
        )
        return Generation(data, attempts, seconds, reply.timings)

    async def _async_attempts(
        self, payload: dict[str, Any], cancel: asyncio.Event | None
    ) -> tuple[_Reply, int]:
        """Return the first answer and its attempt, by the one retry policy."""
        return await async_attempts(
            lambda: self._async_attempt(payload),
            retries=self.retries,
            retry_wait=self.retry_wait,
            yield_to=self.yield_to,
            cancel=cancel,
        )

    async def _async_attempt(self, payload: dict[str, Any]) -> _Reply:
        """Stream one answer; the whole attempt is bounded by `attempt_timeout`."""
        answer = Answer()
        pieces: list[str] = []
        try:
            async with asyncio.timeout(self.attempt_timeout):
                await self._async_read(payload, answer, pieces)
        except TimeoutError as err:
            raise GenerationError(
                "timeout", f"no full answer within {self.attempt_timeout:g} s"
            ) from err
        except ServerTimeout as err:
            raise GenerationError("timeout", str(err)) from err
        check_finished(answer, bool(pieces), payload["max_tokens"])
        return _Reply("".join(pieces), answer.timings)

    async def _async_read(
        self, payload: dict[str, Any], answer: Answer, pieces: list[str]
    ) -> None:
        """Read the stream into `pieces` through `answer`, refusing a flood."""
        bound = TextBound(payload["max_tokens"])
        # The attempt's own bound is `attempt_timeout`, raced by the caller.
        async for chunk in self.client.async_stream_chat(
            payload, self.attempt_timeout, None
        ):
            for delta in answer.read(chunk):
                if text := delta.get("content"):
                    bound.add(text)
                    pieces.append(text)


async def async_attempts[T](
    attempt: Callable[[], Awaitable[T]],
    *,
    retries: int = DEFAULT_RETRIES,
    retry_wait: float = DEFAULT_RETRY_WAIT,
    yield_to: ServerActivity | None = None,
    cancel: asyncio.Event | None = None,
) -> tuple[T, int]:
    """Make `attempt` (one request, read whole) until it answers; its answer and number.

    A fault that may pass (`passes`) is tried again `retries` times,
    `retry_wait` seconds apart and doubling; any other is a GenerationError.
    With `yield_to`, conversations go first: an attempt waits while one
    runs, and one that starts withdraws it, to be made again after. `cancel`
    withdraws it all.
    """
    number = 1
    while True:
        try:
            return await _async_in_turn(attempt, yield_to, cancel), number
        except LlamaServerError as err:
            _LOGGER.debug(
                "Generation attempt %d failed: %s",
                number,
                without_credentials(repr(err)),
            )
            if number > retries or not passes(err):
                raise generation_error(err, number) from err
        await _sleep_or_cancel(retry_wait * 2 ** (number - 1), cancel)
        number += 1


async def _async_in_turn[T](
    attempt: Callable[[], Awaitable[T]],
    yield_to: ServerActivity | None,
    cancel: asyncio.Event | None,
) -> T:
    """Make one attempt while no conversation runs; make it again if one starts."""
    while True:
        stops: list[tuple[asyncio.Event, Callable[[str], Exception]]] = []
        if cancel is not None:
            stops.append((cancel, _cancelled))
        if yield_to is not None:
            await _wait_or_cancel(yield_to.idle, cancel)
            stops.append((yield_to.busy, _Interrupted))
        try:
            return await _race(attempt(), stops)
        except _Interrupted:
            _LOGGER.debug("A conversation started; generating again after it")


def passes(err: LlamaServerError) -> bool:
    """Whether a fault may pass: unreachable, cut, or a server error (5xx)."""
    if isinstance(err, TRANSIENT):
        return True
    return isinstance(err, ServerFailed) and (err.status or 0) >= 500


@dataclass(frozen=True, slots=True)
class Expected:
    """What a generation must answer: text, or JSON valid for `structure`."""

    # The answer's name in the request's JSON schema (a task's name).
    name: str = "answer"
    structure: vol.Schema | None = None

    def response_format(self) -> dict[str, Any] | None:
        """Return llama-server's `response_format` for the structure, if any."""
        if self.structure is None:
            return None
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": json_schema(self.structure)},
        }

    def parse(self, text: str) -> Any:
        """Return the text, or its JSON valid for the structure; else invalid_output."""
        return (
            text if self.structure is None else parse_structured(text, self.structure)
        )


@dataclass(slots=True)
class TextBound:
    """The text of an answer as it streams, refused once `max_tokens` cannot hold it."""

    max_tokens: int
    size: int = 0

    def add(self, text: str) -> None:
        """Count a piece of text; an answer over the bound is invalid_output."""
        limit = self.max_tokens * ANSWER_CHARS_PER_TOKEN
        self.size += len(text)
        if self.size > limit:
            raise GenerationError(
                "invalid_output",
                f"the answer is over {limit} characters, more than "
                f"{self.max_tokens} tokens can hold",
            )


def check_finished(answer: Answer, has_text: bool, max_tokens: int) -> None:
    """Refuse an answer cut by `max_tokens`, or one of malformed parts only."""
    if answer.finish_reason == "length":
        raise GenerationError(
            "invalid_output", f"the answer was cut at {max_tokens} tokens"
        )
    if not has_text and answer.malformed:
        raise GenerationError(
            "invalid_output",
            f"the answer held {answer.malformed} malformed parts and no text",
        )


def generation_error(err: LlamaServerError, attempts: int = 1) -> GenerationError:
    """Return the typed failure of a fault, naming what happened, credentials cut."""
    if isinstance(err, ServerTimeout):
        return GenerationError("timeout", str(err))
    message = without_credentials(str(err))
    tried = f" ({attempts} attempts)" if attempts > 1 else ""
    if isinstance(err, ServerFailed) and err.status != BUSY:
        return GenerationError(
            "refused", f"llama-server refused the request: {message}{tried}"
        )
    if isinstance(err, InvalidAuth):
        return GenerationError("refused", "llama-server refused the API key")
    if isinstance(err, ServerFailed):
        return GenerationError("unavailable", f"{message}{tried}")
    return GenerationError("unavailable", f"{type(err).__name__}: {message}{tried}")


def _cancelled(message: str) -> GenerationError:
    return GenerationError("cancelled", message)


class _Interrupted(Exception):
    """A conversation started while a yielding request was in flight."""


async def _race(
    work: Any, stops: list[tuple[asyncio.Event, Callable[[str], Exception]]]
) -> Any:
    """Await `work` for its result; abandon it with the matching error when an event is set.

    Abandoning closes the HTTP stream, which makes llama-server stop
    generating for it.
    """
    for event, error in stops:
        if event.is_set():
            work.close()
            raise error("withdrawn before it was sent")
    task = asyncio.ensure_future(work)
    waiters = {asyncio.ensure_future(event.wait()): error for event, error in stops}
    try:
        done, _ = await asyncio.wait(
            {task, *waiters}, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        for waiter in waiters:
            waiter.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task in done:
        return task.result()
    error = next(waiters[waiter] for waiter in done if waiter in waiters)
    raise error("withdrawn while generating")


async def _wait_or_cancel(event: asyncio.Event, cancel: asyncio.Event | None) -> None:
    """Wait for `event`; a `cancel` that comes first is a cancelled GenerationError."""
    if cancel is None:
        await event.wait()
        return
    await _race(event.wait(), [(cancel, _cancelled)])


async def _sleep_or_cancel(seconds: float, cancel: asyncio.Event | None) -> None:
    """Sleep before a retry; a `cancel` that comes first cancels it."""
    if cancel is None:
        await asyncio.sleep(seconds)
        return
    await _race(asyncio.sleep(seconds), [(cancel, _cancelled)])


def json_schema(structure: vol.Schema) -> dict[str, Any]:
    """Return the JSON schema llama-server constrains the answer with."""
    # Selectors are how `ai_task.generate_data` describes a structure's fields.
    schema: dict[str, Any] = vol.to_openapi(
        structure,
        custom_serializer=llm.selector_serializer,
        openapi_version="3.1.0",
    )
    return schema


def parse_structured(text: str, structure: vol.Schema | Callable[[Any], Any]) -> Any:
    """Return the answer's JSON, valid for `structure`; else invalid_output."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        # RecursionError: thousands of nested brackets.
        raise GenerationError(
            "invalid_output", f"the answer is not JSON ({err}): {text[:200]!r}"
        ) from err
    try:
        return structure(data)
    except vol.Invalid as err:
        raise GenerationError(
            "invalid_output", f"the answer does not match the schema: {err}"
        ) from err
    except (TypeError, AttributeError, ValueError, RecursionError) as err:
        # A selector's validator given a value of another type (a number
        # where a `trigger` selector expects a list) raises these.
        raise GenerationError(
            "invalid_output",
            f"the answer does not match the schema: {type(err).__name__}: {err}",
        ) from err
