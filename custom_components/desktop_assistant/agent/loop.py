"""The tool loop of an agent: ChatLog in, llama-server's stream out as deltas."""

from collections.abc import AsyncGenerator, Callable
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
from ..llm import tool_examples
from ..runtime import DATA_CHAT, DATA_CONFIRMATIONS, DATA_TOOLS
from ..server.client import LlamaServerError
from ..server.constrained import ConstrainedAnswer
from ..server.credentials import without_credentials
from ..server.generate import (
    Expected,
    TextBound,
    async_attempts,
    check_finished,
)
from ..server.request import chat_payload
from ..server.stream import Answer, Delta, ToolCallFragments
from .confirmation import held_by_agent, held_call
from .constrained import CONSTRAINED_TOOL_ROUNDS, RoundRequest
from .echo import EchoGuard, tool_words
from .messages import build_messages, format_tools
from .narrowing import pointed_tools, questions_of
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
    # An AI task's attachments, as parts of its question's message.
    attached: tuple[dict[str, Any], ...] = ()

    async def async_run_tool_loop(
        self, chat_log: conversation.ChatLog, turn: Turn
    ) -> None:
        """Answer the question in the chat log, running tool rounds as asked.

        The turn's route (which servers, in order) is chosen by the caller.
        After `tool_rounds` rounds one more request goes without tools, which
        makes the model answer in text; a server asked for constrained calls
        gets at most CONSTRAINED_TOOL_ROUNDS.
        """
        assert turn.route is not None
        options = self.options
        turn.deadline = self.hass.loop.time() + float(options[CONF_TURN_TIMEOUT])
        tools = format_tools(chat_log.llm_api) if chat_log.llm_api else []
        offered = {tool["function"]["name"] for tool in tools}
        held = held_by_agent(chat_log.llm_api)
        tool_rounds, round_number = int(options[CONF_TOOL_ROUNDS]), 0
        history = int(options[CONF_MAX_HISTORY])
        while round_number <= tool_rounds:
            offer = bool(tools) and round_number < tool_rounds
            request = self._round_request(chat_log, tools, offer, history)
            hold = partial(self._held_answer, chat_log, turn, request, held)
            stream = RoundStream(request, EchoGuard(tool_words(chat_log)))
            async for _content in chat_log.async_add_delta_content_stream(
                self.entity_id,
                self._async_deltas(stream, turn, offered if offer else set(), hold),
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
            if request.constrained:
                tool_rounds = min(tool_rounds, CONSTRAINED_TOOL_ROUNDS)
            round_number += 1
        _trace(chat_log, turn)

    async def async_generate_answer(
        self, chat_log: conversation.ChatLog, turn: Turn, expected: Expected
    ) -> None:
        """Generate an answer (an AI task's) into the chat log, whole and checked.

        One request, without tools or history, of the text or JSON structure
        `expected` asks for; each attempt within the request timeout, by the
        one retry policy of generation. Its faults raise a GenerationError
        instead of being said.
        """
        assert turn.route is not None
        request = self._round_request(chat_log, [], False, 0, expected)

        async def deltas() -> AsyncGenerator[Delta]:
            yield {"role": "assistant"}
            for delta in await self._async_generate(request, turn):
                yield delta

        async for _content in chat_log.async_add_delta_content_stream(
            self.entity_id, deltas()
        ):
            pass
        _trace(chat_log, turn)

    def _round_request(
        self,
        chat_log: conversation.ChatLog,
        tools: list[dict[str, Any]],
        offer: bool,
        history: int,
        expected: Expected | None = None,
    ) -> RoundRequest:
        """One round's request: native or constrained calls, by each server's template."""
        options = self.options
        return RoundRequest(
            options.get(CONF_TOOL_CALLS, TOOL_CALLS_AUTO),
            tools,
            offer,
            partial(
                build_messages,
                chat_log.content,
                history,
                self._is_chat_thread(chat_log),
                self.attached,
            ),
            partial(
                chat_payload,
                options[CONF_MODEL],
                temperature=float(options[CONF_TEMPERATURE]),
                max_tokens=int(options[CONF_MAX_TOKENS]),
                response_format=expected.response_format() if expected else None,
            ),
            int(options[CONF_MAX_TOKENS]),
            pointed_tools(
                tools,
                questions_of(chat_log.content),
                tool_examples(
                    chat_log.llm_api.tools if chat_log.llm_api else [],
                    self.hass.data.get(DATA_TOOLS),
                ),
            ),
        )

    def _is_chat_thread(self, chat_log: conversation.ChatLog) -> bool:
        """Whether the turn is a Chat thread's, which keeps earlier tool calls."""
        chat = self.hass.data.get(DATA_CHAT)
        return chat is not None and chat.in_progress(chat_log.conversation_id)

    def _held_answer(
        self,
        chat_log: conversation.ChatLog,
        turn: Turn,
        request: RoundRequest,
        held: dict[str, llm.Tool],
        tool_input: llm.ToolInput,
    ) -> str | None:
        """The answer of a call held for the person's yes; None to run it now.

        A model asked for constrained calls cannot call tools well (it
        cancelled timers when asked the time), so whatever it calls that
        changes things waits for the yes; a native model keeps Home
        Assistant's behaviour.
        """
        if not request.constrained or (tool := held.get(tool_input.tool_name)) is None:
            return None
        return self.hass.data[DATA_CONFIRMATIONS].hold(
            chat_log, held_call(tool, tool_input.tool_args), turn.language
        )

    async def _async_deltas(
        self,
        stream: RoundStream,
        turn: Turn,
        offered: set[str],
        hold: Callable[[llm.ToolInput], str | None],
    ) -> AsyncGenerator[Delta]:
        """Stream one request's answer as ChatLog deltas; faults become text.

        `hold` says which calls wait for a yes. An answer that repeats a
        tool's own words ends the turn with our sentence instead (echo.py).
        """
        assert turn.route is not None
        yield {"role": "assistant"}
        try:
            async for delta in self._async_stream(stream, turn):
                yield delta
        except LlamaServerError as err:
            _LOGGER.warning(
                "llama-server %s failed: %s",
                turn.route.tried,
                without_credentials(repr(err)),
            )
            # Text held back as a possible echo was never shown: the record keeps it.
            turn.withheld = stream.guard.held.strip() if stream.guard.holding else ""
            if delta := await self._async_fault(turn, err.kind, stream.streamed_text):
                yield delta
            return
        if stream.guard.echo is not None:
            if delta := await self._async_echo(turn, stream):
                yield delta
            return
        async for delta in self._async_answered(turn, stream, offered, hold):
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

    async def _async_answered(
        self,
        turn: Turn,
        stream: RoundStream,
        offered: set[str],
        hold: Callable[[llm.ToolInput], str | None],
    ) -> AsyncGenerator[Delta]:
        """After a streamed answer: its timings, then a fault or its tool calls.

        A silent or spoiled answer ends the turn with its fault.
        """
        answer = stream.answer or stream.request.reader()
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
            turn, calls, offered, stream.streamed_text, hold
        ):
            yield delta

    async def _async_generate(self, request: RoundRequest, turn: Turn) -> list[Delta]:
        """Return a generated answer's deltas, read whole and checked.

        Each attempt is bounded by the request timeout, the text by what
        `max_tokens` can hold; nothing reaches the chat log before the answer
        is whole. It does not step aside for conversations: a conversation's
        own tool may ask for it, and would wait on itself.
        """
        assert turn.route is not None
        route = turn.route
        timeout = float(self.options[CONF_REQUEST_TIMEOUT])

        async def attempt() -> list[Delta]:
            answer, deltas = Answer(), []
            bound = TextBound(request.max_tokens)
            turn.deadline = self.hass.loop.time() + timeout
            async for chunk in route.async_stream_chat(
                request.payload_for, timeout, turn.deadline
            ):
                for delta in answer.read(chunk):
                    if text := delta.get("content"):
                        bound.add(text)
                    deltas.append(delta)
            if answer.timings:
                turn.record_timings(answer.timings)
            has_text = any(delta.get("content") for delta in deltas)
            check_finished(answer, has_text, request.max_tokens)
            return deltas

        deltas, _attempts = await async_attempts(attempt)
        return deltas

    async def _async_calls(
        self,
        turn: Turn,
        calls: list[ToolCallFragments],
        offered: set[str],
        streamed_text: bool,
        hold: Callable[[llm.ToolInput], str | None],
    ) -> AsyncGenerator[Delta]:
        """Hand the answer's tool calls to the chat log, after the announcement.

        A held call goes as one the agent answers itself (`external`): Home
        Assistant does not run it, and its result asks for the yes.
        """
        checked, rejected = tool_inputs_of(calls, offered, turn.call_ids)
        tool_inputs, held = [], []
        for checked_input in checked:
            tool_input = checked_input
            if not tool_input.external and (answer := hold(tool_input)) is not None:
                tool_input = llm.ToolInput(
                    tool_input.tool_name,
                    tool_input.tool_args,
                    id=tool_input.id,
                    external=True,
                )
                held.append((tool_input, answer))
            tool_inputs.append(tool_input)
        if not turn.announced:
            runnable = [t.tool_name for t in tool_inputs if not t.external]
            if phrase := await turn.announce(runnable, turn.language):
                turn.announced = turn.spoke = True
                yield {"content": f" {phrase}" if streamed_text else phrase}
        yield {"tool_calls": tool_inputs}
        for tool_input, answer in held:
            yield {
                "role": "tool_result",
                "tool_call_id": tool_input.id,
                "tool_name": tool_input.tool_name,
                "result": llm.ToolResult(data={"result": answer}),
            }
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
        answers with the sentence as an error response (see answer.py),
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

    async def _async_echo(self, turn: Turn, stream: RoundStream) -> Delta | None:
        """End the turn with our sentence for an answer that repeated a tool.

        The record keeps the model's words (`withheld`) before the sentence.
        """
        guard = stream.guard
        assert guard.echo is not None
        echo = guard.echo
        # Text the person saw is in the chat log, and so in the record.
        turn.withheld = "" if stream.streamed_text else guard.held.strip()
        template = await async_fault_sentence(self.hass, echo.kind, turn.language)
        sentence = template.format(tool=echo.tool, reason=echo.reason)
        return await self._async_fault(turn, echo.kind, stream.streamed_text, sentence)


def _trace(chat_log: conversation.ChatLog, turn: Turn) -> None:
    """Keep the turn's timings and the server that answered in the chat log's trace."""
    if turn.timings:
        chat_log.async_trace({"timings": turn.timings})
    if turn.route is not None and (server := turn.route.answered) is not None:
        chat_log.async_trace({"server": server.name, "model": server.model})
