"""The tool loop of an agent: ChatLog in, llama-server's stream out as deltas."""

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from functools import partial
import logging
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from ..const import (
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    CONF_TOOL_ROUNDS,
    CONF_TURN_TIMEOUT,
    TOOL_CALLS_AUTO,
)
from ..runtime import DATA_CONFIRMATIONS
from ..server.client import LlamaServerError
from ..server.constrained import ConstrainedAnswer
from ..server.credentials import without_credentials
from ..server.generate import (
    DEFAULT_RETRIES,
    DEFAULT_RETRY_WAIT,
    Expected,
    TextBound,
    check_finished,
    generation_error,
    passes,
)
from ..server.request import chat_payload
from ..server.stream import Answer, Delta, ToolCallFragments
from .constrained import RoundRequest, pointed_tools, question_and_calls
from .echo import EchoGuard, tool_words
from .messages import build_messages, format_tools
from .spoken import async_fault_sentence
from .tool_calls import tool_inputs_of
from .turn_state import Turn

_LOGGER = logging.getLogger(__name__)
# Ends a reply that *Maximum tokens* cut short.
CUT_MARK: Final = "…"


@dataclass(slots=True)
class RoundStream:
    """One round's answer as it streams: its reader, its guard, what showed."""

    request: RoundRequest
    guard: EchoGuard
    # Made at the first chunk: how to read it depends on the server.
    answer: Answer | ConstrainedAnswer | None = None
    # Whether this round's text was shown (streamed to the person), and how much.
    streamed_text: bool = False
    shown_chars: int = 0

    def shown(self, turn: Turn, text: str) -> Delta:
        """The delta that shows `text`; the round and the turn have spoken."""
        self.streamed_text = turn.spoke = True
        self.shown_chars += len(text)
        return {"content": text}

    def cut_short(self) -> bool:
        """Whether the text shown stopped at the reply's token limit.

        Natively the server says so (`length`); a constrained answer is
        held to the characters the limit leaves, and ends there whole.
        """
        if not self.streamed_text or self.answer is None:
            return False
        if self.answer.finish_reason == "length":
            return True
        return self.request.constrained and (
            self.shown_chars == self.request.text_budget
        )


@dataclass(frozen=True, slots=True)
class ToolLoop:
    """The tool loop of one agent: its entity id and its options."""

    hass: HomeAssistant
    entity_id: str
    options: dict[str, Any]

    async def async_run_tool_loop(
        self,
        chat_log: conversation.ChatLog,
        turn: Turn,
        expected: Expected | None = None,
    ) -> None:
        """Answer the question in the chat log, running tool rounds as asked.

        The turn's route (which servers, in order) is chosen by the caller.
        After `tool_rounds` rounds one more request goes without tools, which
        makes the model answer in text. A generated answer (`expected`, an AI
        task's) may be asked as JSON of a structure; its faults raise a
        GenerationError instead of being said.
        """
        assert turn.route is not None
        options = self.options
        turn.deadline = self.hass.loop.time() + float(options[CONF_TURN_TIMEOUT])
        tools = format_tools(chat_log.llm_api) if chat_log.llm_api else []
        offered = {tool["function"]["name"] for tool in tools}
        tool_rounds = int(options[CONF_TOOL_ROUNDS])
        for round_number in range(tool_rounds + 1):
            offer = bool(tools) and round_number < tool_rounds
            request = self._round_request(chat_log, tools, offer, expected)
            guard = EchoGuard(tool_words(chat_log) if expected is None else [])
            async for _content in chat_log.async_add_delta_content_stream(
                self.entity_id,
                self._async_deltas(
                    request, turn, offered if offer else set(), guard, expected
                ),
            ):
                pass
            # The round's text is in the chat log now.
            turn.unfinished = ""
            if (
                turn.fault
                or not chat_log.unresponded_tool_results
                # The turn ends with the question about a held call.
                or self.hass.data[DATA_CONFIRMATIONS].held_this_turn(chat_log)
            ):
                break
        if turn.timings:
            chat_log.async_trace({"timings": turn.timings})
        if (server := turn.route.answered) is not None:
            chat_log.async_trace({"server": server.name, "model": server.model})

    def _round_request(
        self,
        chat_log: conversation.ChatLog,
        tools: list[dict[str, Any]],
        offer: bool,
        expected: Expected | None,
    ) -> RoundRequest:
        """One round's request: native or constrained calls, by each server's template."""
        options = self.options
        question, called = question_and_calls(chat_log.content)
        return RoundRequest(
            options.get(CONF_TOOL_CALLS, TOOL_CALLS_AUTO),
            tools,
            offer,
            partial(build_messages, chat_log.content, int(options[CONF_MAX_HISTORY])),
            partial(
                chat_payload,
                options[CONF_MODEL],
                temperature=float(options[CONF_TEMPERATURE]),
                max_tokens=int(options[CONF_MAX_TOKENS]),
                response_format=expected.response_format() if expected else None,
            ),
            int(options[CONF_MAX_TOKENS]),
            pointed_tools(tools, question, called),
        )

    async def _async_deltas(
        self,
        request: RoundRequest,
        turn: Turn,
        offered: set[str],
        guard: EchoGuard,
        expected: Expected | None = None,
    ) -> AsyncGenerator[Delta]:
        """Stream one request's answer as ChatLog deltas; faults become text.

        A generated answer (`expected`) comes whole, once checked, and its
        faults raise a GenerationError. An answer that repeats a tool's own
        words ends the turn with our sentence instead (see echo.py).
        """
        assert turn.route is not None
        yield {"role": "assistant"}
        if expected is not None:
            for delta in await self._async_generate(request, turn):
                yield delta
            return
        stream = RoundStream(request, guard)
        try:
            async for delta in self._async_stream(stream, turn):
                yield delta
        except LlamaServerError as err:
            _LOGGER.warning(
                "llama-server %s failed: %s",
                turn.route.tried,
                without_credentials(repr(err)),
            )
            if delta := await self._async_fault(turn, err.kind, stream.streamed_text):
                yield delta
            return
        if guard.echo is not None:
            if delta := await self._async_echo(turn, guard, stream.streamed_text):
                yield delta
            return
        answer = stream.answer or request.reader()
        if answer.timings:
            turn.record_timings(answer.timings)
        calls = answer.named_calls()
        if answer.malformed:
            _LOGGER.debug("Skipped %d malformed parts of the answer", answer.malformed)
        # A constrained reply is one JSON value: any fault spoils all of it.
        spoiled = bool(answer.malformed) and isinstance(answer, ConstrainedAnswer)
        if spoiled or not calls or not offered:
            if delta := await self._async_no_calls(turn, answer, stream, spoiled):
                yield delta
            return
        # The text joins the chat log with the calls, before they run.
        turn.unfinished = ""
        async for delta in self._async_calls(
            turn, calls, offered, stream.streamed_text
        ):
            yield delta

    async def _async_stream(
        self, stream: RoundStream, turn: Turn
    ) -> AsyncGenerator[Delta]:
        """Read the server's chunks into deltas, text held back by the guard."""
        assert turn.route is not None
        async for chunk in turn.route.async_stream_chat(
            stream.request.payload_for,
            float(self.options[CONF_REQUEST_TIMEOUT]),
            turn.deadline,
        ):
            stream.answer = stream.answer or stream.request.reader()
            for delta in stream.answer.read(chunk):
                if "content" not in delta:
                    yield delta
                    continue
                # A stopped turn's record keeps even the text held back.
                turn.unfinished += delta["content"]
                if text := stream.guard.pass_on(delta["content"]):
                    yield stream.shown(turn, text)
        if text := stream.guard.end():
            yield stream.shown(turn, text)

    async def _async_generate(self, request: RoundRequest, turn: Turn) -> list[Delta]:
        """Return a generated answer's deltas, read whole and checked.

        As generation does: each attempt is bounded by the request timeout,
        the text by what `max_tokens` can hold, and a fault that may pass is
        tried again, `DEFAULT_RETRIES` times, `DEFAULT_RETRY_WAIT` s apart and
        doubling. Nothing reaches the chat log before the answer is whole.
        """
        assert turn.route is not None
        timeout = float(self.options[CONF_REQUEST_TIMEOUT])
        attempt = 1
        while True:
            answer, deltas = Answer(), []
            bound = TextBound(request.max_tokens)
            turn.deadline = self.hass.loop.time() + timeout
            try:
                async for chunk in turn.route.async_stream_chat(
                    request.payload_for, timeout, turn.deadline
                ):
                    for delta in answer.read(chunk):
                        if text := delta.get("content"):
                            bound.add(text)
                        deltas.append(delta)
            except LlamaServerError as err:
                _LOGGER.debug(
                    "Generation attempt %d failed: %s",
                    attempt,
                    without_credentials(repr(err)),
                )
                if attempt > DEFAULT_RETRIES or not passes(err):
                    raise generation_error(err, attempt) from err
                await asyncio.sleep(DEFAULT_RETRY_WAIT * 2 ** (attempt - 1))
                attempt += 1
                continue
            if answer.timings:
                turn.record_timings(answer.timings)
            has_text = any(delta.get("content") for delta in deltas)
            check_finished(answer, has_text, request.max_tokens)
            return deltas

    async def _async_calls(
        self,
        turn: Turn,
        calls: list[ToolCallFragments],
        offered: set[str],
        streamed_text: bool,
    ) -> AsyncGenerator[Delta]:
        """Hand the answer's tool calls to the chat log, after the announcement."""
        tool_inputs, rejected = tool_inputs_of(calls, offered, turn.call_ids)
        if not turn.announced:
            runnable = [t.tool_name for t in tool_inputs if not t.external]
            if phrase := await turn.announce(runnable, turn.language):
                turn.announced = turn.spoke = True
                yield {"content": f" {phrase}" if streamed_text else phrase}
        yield {"tool_calls": tool_inputs}
        for tool_input, error in rejected:
            yield {
                "role": "tool_result",
                "tool_call_id": tool_input.id,
                "tool_name": tool_input.tool_name,
                "result": llm.ToolResult(
                    data={"result": f"error: {error}"}, error=True
                ),
            }

    async def _async_no_calls(
        self,
        turn: Turn,
        answer: Answer | ConstrainedAnswer,
        stream: RoundStream,
        spoiled: bool,
    ) -> Delta | None:
        """What ends a round without calls to run, if anything."""
        if spoiled or not stream.streamed_text:
            return await self._async_silent(turn, answer, stream.streamed_text)
        if stream.cut_short():
            # Marked, so nobody takes a reply cut by Maximum tokens as whole.
            return {"content": CUT_MARK}
        return None

    async def _async_silent(
        self, turn: Turn, answer: Answer | ConstrainedAnswer, streamed_text: bool
    ) -> Delta | None:
        """Say something for a round without calls to run, and text or none."""
        if answer.malformed:
            return await self._async_fault(turn, "unreadable", streamed_text)
        # Something must be said: a voice pipeline cannot speak nothing.
        turn.spoke = True
        return {
            "content": await async_fault_sentence(self.hass, "empty", turn.language)
        }

    async def _async_fault(
        self,
        turn: Turn,
        kind: str,
        streamed_text: bool,
        sentence: str | None = None,
    ) -> Delta | None:
        """End the turn with a fault; return the delta that says so, if any.

        After text the person already saw, the sentence follows it as one
        answer, a paragraph apart (in the same message when this round
        streamed text). Before any text nothing is streamed: the agent
        answers with the sentence as an error response (see turn.py),
        which Assist shows once, in red.
        """
        turn.fault = kind
        turn.fault_sentence = sentence or await async_fault_sentence(
            self.hass, kind, turn.language
        )
        if streamed_text:
            return {"content": f"\n\n{turn.fault_sentence}"}
        if turn.spoke:
            return {"content": turn.fault_sentence}
        return None

    async def _async_echo(
        self, turn: Turn, guard: EchoGuard, streamed_text: bool
    ) -> Delta | None:
        """End the turn with our sentence for an answer that repeated a tool.

        The record keeps the model's words (`withheld`) before the sentence.
        """
        assert guard.echo is not None
        echo = guard.echo
        # Text the person saw is in the chat log, and so in the record.
        turn.withheld = "" if streamed_text else guard.held.strip()
        template = await async_fault_sentence(self.hass, echo.kind, turn.language)
        sentence = template.format(tool=echo.tool, reason=echo.reason)
        return await self._async_fault(turn, echo.kind, streamed_text, sentence)
