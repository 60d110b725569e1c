"""The tool loop of an agent: ChatLog in, llama-server's stream out as deltas."""

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
import json
import logging
import re
from typing import Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_MODEL
from homeassistant.helpers import device_registry as dr, llm
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.json import json_dumps
from homeassistant.util.ulid import ulid_now
import probatio as vol

from . import DesktopAssistantConfigEntry
from .client import LlamaServerError
from .confirmation import DATA_CONFIRMATIONS
from .const import (
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    CONF_TOOL_ROUNDS,
    CONF_TURN_TIMEOUT,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from .spoken import async_fault_sentence

_LOGGER = logging.getLogger(__name__)

# How deeply a tool call's arguments may nest; tool parameters are flat, so
# anything deeper is a confused (or hostile) model.
MAX_ARGUMENT_DEPTH = 32

# The clock line HA adds to the system prompt when no offered tool tells the
# time (llm.DATE_TIME_PROMPT); it is moved out of the cached prefix.
DATE_TIME_LINE = re.compile(
    "\n?"
    + ".+?".join(
        re.escape(part) for part in re.split(r"{{.*?}}", llm.DATE_TIME_PROMPT.strip())
    )
)

type Delta = (
    conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict
)


@dataclass
class ToolCallFragments:
    """A tool call as its stream fragments arrive."""

    id: str | None = None
    name: str = ""
    arguments: str = ""
    # Arguments sent as a JSON value instead of JSON text, as some servers do.
    decoded: object = None


@dataclass
class Answer:
    """One streamed answer as its chunks arrive: tool calls and what was odd.

    Fragments with an integer `index` are pieces of that call; a fragment
    without one (missing, null, a string) is a call of its own, never merged.
    Parts of a chunk of the wrong type are skipped and counted in `malformed`.
    """

    calls: list[ToolCallFragments] = field(default_factory=list)
    by_index: dict[int, ToolCallFragments] = field(default_factory=dict)
    malformed: int = 0

    def read(self, chunk: Mapping[str, Any]) -> list[Delta]:
        """Return the chunk's text and thinking as deltas; keep its tool calls."""
        deltas: list[Delta] = []
        choices = chunk.get("choices")
        if choices is None:
            return deltas
        if not isinstance(choices, list):
            self.malformed += 1
            return deltas
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, dict) else choice
            if delta is None:
                continue
            if not isinstance(delta, dict):
                self.malformed += 1
                continue
            if text := self._text(delta.get("content")):
                deltas.append({"content": text})
            if thinking := self._text(delta.get("reasoning_content")):
                deltas.append({"thinking_content": thinking})
            fragments = delta.get("tool_calls")
            if isinstance(fragments, list):
                for fragment in fragments:
                    self._add_fragment(fragment)
            elif fragments is not None:
                self.malformed += 1
        return deltas

    def named_calls(self) -> list[ToolCallFragments]:
        """Return the calls that name a tool; a call without a name is malformed."""
        named = [call for call in self.calls if call.name]
        self.malformed += len(self.calls) - len(named)
        return named

    def _text(self, value: object) -> str:
        if value is None or isinstance(value, str):
            return value or ""
        self.malformed += 1
        return ""

    def _add_fragment(self, fragment: object) -> None:
        if not isinstance(fragment, dict):
            self.malformed += 1
            return
        index = fragment.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            call = self.by_index.get(index)
            if call is None:
                call = self.by_index[index] = ToolCallFragments()
                self.calls.append(call)
        else:
            call = ToolCallFragments()
            self.calls.append(call)
        if isinstance(call_id := fragment.get("id"), str) and call_id:
            call.id = call.id or call_id
        function = fragment.get("function")
        if function is None:
            return
        if not isinstance(function, dict):
            self.malformed += 1
            return
        name = function.get("name")
        if isinstance(name, str):
            # A name may come in pieces, like the arguments.
            call.name += name
        elif name is not None:
            self.malformed += 1
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments += arguments
        elif arguments is not None:
            call.decoded = arguments


def nesting_depth(value: object) -> int:
    """Return how deeply lists and objects nest in a JSON value, without recursion."""
    depth = 0
    level = [value]
    while level:
        containers = [item for item in level if isinstance(item, dict | list)]
        if not containers:
            break
        depth += 1
        if depth > MAX_ARGUMENT_DEPTH:
            break
        level = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return depth


def decode_arguments(call: ToolCallFragments) -> tuple[object, str | None]:
    """Return the call's arguments as a JSON value, or why they cannot be read."""
    if call.decoded is not None:
        if call.arguments:
            return None, "arguments came both as JSON text and as a JSON value"
        return call.decoded, None
    try:
        return json.loads(call.arguments or "{}"), None
    except json.JSONDecodeError as err:
        return None, f"arguments are not valid JSON ({err.msg}): {call.arguments[:200]}"
    except RecursionError:
        return None, "arguments nest too deeply"
    except ValueError as err:
        # Python refuses integers of over 4300 digits.
        return None, f"arguments are not usable JSON ({err})"


def parse_tool_call(
    call: ToolCallFragments, offered: set[str]
) -> tuple[dict[str, Any], str | None]:
    """Return the call's arguments, or why the call cannot be run."""
    if call.name not in offered:
        return {}, f"unknown tool {call.name!r}; offered: {', '.join(sorted(offered))}"
    arguments, error = decode_arguments(call)
    if error is not None:
        return {}, error
    if not isinstance(arguments, dict):
        return {}, f"arguments must be a JSON object, got: {str(arguments)[:200]}"
    if nesting_depth(arguments) > MAX_ARGUMENT_DEPTH:
        return {}, "arguments nest too deeply"
    return arguments, None


def tool_inputs_of(
    calls: list[ToolCallFragments], offered: set[str], used_ids: set[str]
) -> tuple[list[llm.ToolInput], list[tuple[llm.ToolInput, str]]]:
    """Return the round's calls for HA, and those it must not run, with why.

    A call that cannot run is marked external, so HA leaves it to the agent,
    which answers it with an error result for the model. A call without an
    id, or with one already used in the turn, gets a new one, so that each
    call has its own result message.
    """
    tool_inputs: list[llm.ToolInput] = []
    rejected: list[tuple[llm.ToolInput, str]] = []
    for call in calls:
        arguments, error = parse_tool_call(call, offered)
        call_id = call.id if call.id and call.id not in used_ids else ulid_now()
        used_ids.add(call_id)
        tool_input = llm.ToolInput(
            tool_name=call.name,
            tool_args=arguments,
            id=call_id,
            external=error is not None,
        )
        tool_inputs.append(tool_input)
        if error is not None:
            _LOGGER.debug("Not running tool call %.100r: %s", call.name, error)
            rejected.append((tool_input, error))
    return tool_inputs, rejected


def tool_result_text(result: llm.ToolResult) -> str:
    """Return a tool result as the text of a `tool` message."""
    data = result.data
    # Tool files answer {"result": text}; the model gets the text itself.
    if (
        isinstance(data, dict)
        and data.keys() == {"result"}
        and isinstance(text := data["result"], str)
    ):
        return text
    return json_dumps(data)


def format_tools(api: llm.APIInstance) -> list[dict[str, Any]]:
    """Return the API's tools as OpenAI function specs, sorted by name.

    Sorted, so the tool list, part of the cached prompt prefix, is the same
    bytes whatever order the APIs list their tools in.
    """
    specs = [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": vol.to_openapi(
                    tool.parameters,
                    custom_serializer=api.custom_serializer,
                    openapi_version="3.1.0",
                ),
            },
        }
        for tool in api.tools
    ]
    return sorted(specs, key=lambda spec: spec["function"]["name"])


def build_messages(
    content: list[conversation.Content], max_history: int
) -> list[dict[str, Any]]:
    """Return the chat messages for the current request.

    Earlier turns contribute only the person's text and the final reply, at
    most `max_history` messages, starting with a user message; the current
    turn is sent whole, tool calls and results included. The clock line, if
    any, is moved from the system prompt to the current question, so the
    prefix stays cacheable.
    """
    system = content[0].content
    clock = ""
    if match := DATE_TIME_LINE.search(system):
        clock = match.group(0).strip()
        system = system[: match.start()] + system[match.end() :]
    turn_start = max(
        index
        for index, item in enumerate(content)
        if isinstance(item, conversation.UserContent)
    )
    history = (
        earlier_exchanges(content[1:turn_start])[-max_history:] if max_history else []
    )
    if history and history[0]["role"] != "user":
        history = history[1:]
    current = [message_of(item) for item in content[turn_start:]]
    if clock:
        current[0]["content"] = f"{current[0]['content']}\n\n{clock}"
    return [{"role": "system", "content": system}, *history, *current]


def earlier_exchanges(content: Iterable[conversation.Content]) -> list[dict[str, Any]]:
    """Return each earlier question with its final reply; unanswered ones drop."""
    exchanges: list[list[str]] = []
    for item in content:
        if isinstance(item, conversation.UserContent):
            exchanges.append([item.content])
        elif (
            isinstance(item, conversation.AssistantContent)
            and item.content
            and exchanges
        ):
            # The last text of a turn is its final reply.
            exchanges[-1][1:] = [item.content]
    return [
        message
        for exchange in exchanges
        if len(exchange) == 2
        for message in (
            {"role": "user", "content": exchange[0]},
            {"role": "assistant", "content": exchange[1]},
        )
    ]


def message_of(item: conversation.Content) -> dict[str, Any]:
    """Return the chat message of one piece of the current turn."""
    if isinstance(item, conversation.ToolResultContent):
        return {
            "role": "tool",
            "tool_call_id": item.tool_call_id,
            "content": tool_result_text(item.result),
        }
    if isinstance(item, conversation.AssistantContent):
        message: dict[str, Any] = {"role": "assistant", "content": item.content or ""}
        if item.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.tool_name,
                        "arguments": json.dumps(call.tool_args, ensure_ascii=False),
                    },
                }
                for call in item.tool_calls
            ]
        return message
    return {"role": item.role, "content": item.content}


@dataclass
class Turn:
    """What one question has done so far across its rounds."""

    language: str | None
    # Picks the phrase to say for the tools about to run (names, language).
    announce: Callable[[list[str], str | None], Awaitable[str | None]]
    announced: bool = False
    fault: str | None = None
    # What the person heard about the fault; the record splits it off the reply.
    fault_sentence: str | None = None
    timings: list[dict[str, Any]] = field(default_factory=list)
    # Event loop time by which the turn must be answered.
    deadline: float | None = None
    # Tool call ids given out in this turn.
    call_ids: set[str] = field(default_factory=set)

    def record_timings(self, timings: dict[str, Any]) -> None:
        """Keep llama-server's timings of a round for the trace, and log them."""
        self.timings.append(timings)
        _LOGGER.debug(
            "llama-server timings: prompt_n=%s cache_n=%s predicted_per_second=%s",
            timings.get("prompt_n"),
            timings.get("cache_n"),
            timings.get("predicted_per_second"),
        )


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
            model=subentry.data.get(CONF_MODEL),
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

        After `tool_rounds` rounds one more request goes without tools, which
        makes the model answer in text.
        """
        options = self.options
        turn.deadline = self.hass.loop.time() + float(options[CONF_TURN_TIMEOUT])
        tools = format_tools(chat_log.llm_api) if chat_log.llm_api else []
        offered = {tool["function"]["name"] for tool in tools}
        tool_rounds = int(options[CONF_TOOL_ROUNDS])
        for round_number in range(tool_rounds + 1):
            offer = bool(tools) and round_number < tool_rounds
            payload: dict[str, Any] = {
                "model": options[CONF_MODEL],
                "messages": build_messages(
                    chat_log.content, int(options[CONF_MAX_HISTORY])
                ),
                "stream": True,
                "cache_prompt": True,
                "temperature": float(options[CONF_TEMPERATURE]),
                "max_tokens": int(options[CONF_MAX_TOKENS]),
            }
            if offer:
                payload["tools"] = tools
            async for _content in chat_log.async_add_delta_content_stream(
                self.entity_id,
                self._async_deltas(payload, turn, offered if offer else set()),
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

    async def _async_deltas(
        self, payload: dict[str, Any], turn: Turn, offered: set[str]
    ) -> AsyncGenerator[Delta]:
        """Stream one request's answer as ChatLog deltas; faults become text."""
        client = self.entry.runtime_data
        yield {"role": "assistant"}
        answer = Answer()
        streamed_text = False
        try:
            async for chunk in client.async_stream_chat(
                payload, float(self.options[CONF_REQUEST_TIMEOUT]), turn.deadline
            ):
                if chunk is None:
                    answer.malformed += 1
                    continue
                if isinstance(timings := chunk.get("timings"), dict):
                    turn.record_timings(timings)
                for delta in answer.read(chunk):
                    streamed_text = streamed_text or "content" in delta
                    yield delta
        except LlamaServerError as err:
            turn.fault = err.kind
            _LOGGER.warning("llama-server at %s failed: %r", client.url, err)
            message = await async_fault_sentence(self.hass, turn.fault, turn.language)
            turn.fault_sentence = message
            # Text already streamed stays; the explanation follows it.
            yield {"content": f" {message}" if streamed_text else message}
            return
        calls = answer.named_calls()
        if answer.malformed:
            _LOGGER.debug("Skipped %d malformed parts of the answer", answer.malformed)
        if not calls or not offered:
            if not streamed_text:
                # Something must be said: a voice pipeline cannot speak nothing.
                kind = "unreadable" if answer.malformed else "empty"
                message = await async_fault_sentence(self.hass, kind, turn.language)
                if answer.malformed:
                    turn.fault = kind
                    turn.fault_sentence = message
                yield {"content": message}
            return
        tool_inputs, rejected = tool_inputs_of(calls, offered, turn.call_ids)
        if not turn.announced:
            runnable = [t.tool_name for t in tool_inputs if not t.external]
            if phrase := await turn.announce(runnable, turn.language):
                turn.announced = True
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
