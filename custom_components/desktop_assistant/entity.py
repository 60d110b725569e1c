"""The tool loop of an agent: ChatLog in, llama-server's stream out as deltas."""

from collections.abc import AsyncGenerator, Callable, Coroutine
from functools import partial
import logging
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, llm
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from .agent.constrained import RoundRequest
from .agent.messages import build_messages, format_tools
from .agent.spoken import async_fault_sentence
from .agent.tool_calls import tool_inputs_of
from .agent.turn import Turn
from .const import (
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    CONF_TOOL_ROUNDS,
    CONF_TURN_TIMEOUT,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from .runtime import DATA_CONFIRMATIONS, DesktopAssistantConfigEntry
from .server.client import LlamaServerError
from .server.constrained import ConstrainedAnswer
from .server.credentials import without_credentials
from .server.request import chat_payload
from .server.stream import Answer, Delta
from .text import model_name

_LOGGER = logging.getLogger(__name__)


def subentry_platform_setup(
    subentry_type: str,
    entity_class: Callable[
        [DesktopAssistantConfigEntry, ConfigSubentry], "DesktopAssistantEntity"
    ],
) -> Callable[
    [HomeAssistant, DesktopAssistantConfigEntry, AddConfigEntryEntitiesCallback],
    Coroutine[Any, Any, None],
]:
    """A platform's `async_setup_entry`: one entity for each subentry of the type.

    The conversation and AI task platforms set up the same way; each entity
    belongs to its subentry, so it goes and comes with it.
    """

    async def async_setup_entry(
        hass: HomeAssistant,
        entry: DesktopAssistantConfigEntry,
        async_add_entities: AddConfigEntryEntitiesCallback,
    ) -> None:
        for subentry in entry.subentries.values():
            if subentry.subentry_type == subentry_type:
                async_add_entities(
                    [entity_class(entry, subentry)],
                    config_subentry_id=subentry.subentry_id,
                )

    return async_setup_entry


class DesktopAssistantEntity(Entity):
    """An agent of a llama-server entry, one per conversation subentry."""

    _attr_has_entity_name = True
    _attr_name = None

    def __init__(
        self, entry: DesktopAssistantConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Describe the agent as a service device named after its subentry."""
        self.entry = entry
        self.subentry = subentry
        self._attr_unique_id = subentry.subentry_id
        self._attr_device_info = dr.DeviceInfo(
            identifiers={(DOMAIN, subentry.subentry_id)},
            name=subentry.title,
            manufacturer="llama.cpp",
            # The model's file, not the path llama-server was started with.
            model=model_name(subentry.data.get(CONF_MODEL) or "") or None,
            entry_type=dr.DeviceEntryType.SERVICE,
        )

    @property
    def options(self) -> dict[str, Any]:
        """The agent's options, defaults filled in."""
        return DEFAULT_AGENT_OPTIONS | dict(self.subentry.data)

    async def async_run_tool_loop(
        self, chat_log: conversation.ChatLog, turn: Turn
    ) -> None:
        """Answer the question in the chat log, running tool rounds as asked.

        The turn's route (which servers, in order) is chosen by the caller.
        After `tool_rounds` rounds one more request goes without tools, which
        makes the model answer in text.
        """
        assert turn.route is not None
        options = self.options
        turn.deadline = self.hass.loop.time() + float(options[CONF_TURN_TIMEOUT])
        tools = format_tools(chat_log.llm_api) if chat_log.llm_api else []
        offered = {tool["function"]["name"] for tool in tools}
        tool_rounds = int(options[CONF_TOOL_ROUNDS])
        for round_number in range(tool_rounds + 1):
            offer = bool(tools) and round_number < tool_rounds
            # Native or constrained tool calls, by each server's template.
            request = RoundRequest(
                options[CONF_TOOL_CALLS],
                tools,
                offer,
                partial(
                    build_messages, chat_log.content, int(options[CONF_MAX_HISTORY])
                ),
                partial(
                    chat_payload,
                    options[CONF_MODEL],
                    temperature=float(options[CONF_TEMPERATURE]),
                    max_tokens=int(options[CONF_MAX_TOKENS]),
                ),
                int(options[CONF_MAX_TOKENS]),
            )
            async for _content in chat_log.async_add_delta_content_stream(
                self.entity_id,
                self._async_deltas(request, turn, offered if offer else set()),
            ):
                pass
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

    async def _async_deltas(
        self, request: RoundRequest, turn: Turn, offered: set[str]
    ) -> AsyncGenerator[Delta]:
        """Stream one request's answer as ChatLog deltas; faults become text."""
        assert turn.route is not None
        yield {"role": "assistant"}
        # Made at the first chunk: how to read it depends on the server that answers.
        answer: Answer | ConstrainedAnswer | None = None
        streamed_text = False
        try:
            async for chunk in turn.route.async_stream_chat(
                request.payload_for,
                float(self.options[CONF_REQUEST_TIMEOUT]),
                turn.deadline,
            ):
                answer = answer or request.reader()
                for delta in answer.read(chunk):
                    streamed_text = streamed_text or "content" in delta
                    turn.spoke = turn.spoke or streamed_text
                    yield delta
        except LlamaServerError as err:
            _LOGGER.warning(
                "llama-server %s failed: %s",
                turn.route.tried,
                without_credentials(repr(err)),
            )
            if delta := await self._async_fault(turn, err.kind, streamed_text):
                yield delta
            return
        answer = answer or request.reader()
        if answer.timings:
            turn.record_timings(answer.timings)
        calls = answer.named_calls()
        if answer.malformed:
            _LOGGER.debug("Skipped %d malformed parts of the answer", answer.malformed)
        # A constrained reply is one JSON value: any fault spoils all of it.
        spoiled = bool(answer.malformed) and isinstance(answer, ConstrainedAnswer)
        if spoiled or not calls or not offered:
            if (spoiled or not streamed_text) and (
                delta := await self._async_silent(turn, answer, streamed_text)
            ):
                yield delta
            return
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
        self, turn: Turn, kind: str, streamed_text: bool
    ) -> Delta | None:
        """End the turn with a fault; return the delta that says so, if any.

        After text the person already saw, the sentence follows it as one
        answer, a paragraph apart (in the same message when this round
        streamed text). Before any text nothing is streamed: the agent
        answers with the sentence as an error response (see conversation.py),
        which Assist shows once, in red.
        """
        turn.fault = kind
        turn.fault_sentence = await async_fault_sentence(self.hass, kind, turn.language)
        if streamed_text:
            return {"content": f"\n\n{turn.fault_sentence}"}
        if turn.spoke:
            return {"content": turn.fault_sentence}
        return None
