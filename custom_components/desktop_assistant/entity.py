"""The tool loop of an agent: ChatLog in, llama-server's stream out as deltas."""

from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
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
from .client import (
    CannotConnect,
    InvalidAuth,
    LlamaServerError,
    NotOpenAICompatible,
    ServerFailed,
    ServerTimeout,
    StreamCut,
    UnreadableAnswer,
)
from .confirmation import DATA_CONFIRMATIONS
from .const import (
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    CONF_TOOL_ROUNDS,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
    FAULT_MESSAGES,
)

_LOGGER = logging.getLogger(__name__)

FAULT_KINDS: dict[type[LlamaServerError], str] = {
    CannotConnect: "cannot_connect",
    ServerTimeout: "timeout",
    InvalidAuth: "invalid_auth",
    NotOpenAICompatible: "server_error",
    ServerFailed: "server_error",
    StreamCut: "stream_cut",
    UnreadableAnswer: "unreadable",
}

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


def fault_message(kind: str, language: str | None) -> str:
    """Return what the person hears for a fault, in their language if known."""
    messages = FAULT_MESSAGES[kind]
    primary = (language or "en").split("-")[0].split("_")[0].lower()
    return messages.get(primary, messages["en"])


@dataclass
class ToolCallFragments:
    """A tool call as its stream fragments arrive."""

    id: str | None = None
    name: str = ""
    arguments: str = ""


def collect_tool_calls(
    calls: dict[int, ToolCallFragments], fragments: Iterable[Mapping[str, Any]]
) -> None:
    """Add `delta.tool_calls` fragments to the calls, by their `index`.

    `id` and `function.name` come from the first fragment that has them;
    `function.arguments` pieces are concatenated.
    """
    for fragment in fragments:
        call = calls.setdefault(fragment.get("index", 0), ToolCallFragments())
        function = fragment.get("function") or {}
        call.id = call.id or fragment.get("id")
        call.name = call.name or function.get("name") or ""
        call.arguments += function.get("arguments") or ""


def parse_tool_call(
    call: ToolCallFragments, offered: set[str]
) -> tuple[dict[str, Any], str | None]:
    """Return the call's arguments, or why the call cannot be run."""
    if call.name not in offered:
        return {}, f"unknown tool {call.name!r}; offered: {', '.join(sorted(offered))}"
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError as err:
        return {}, f"arguments are not valid JSON ({err.msg}): {call.arguments[:200]}"
    if not isinstance(arguments, dict):
        return {}, f"arguments must be a JSON object, got: {call.arguments[:200]}"
    return arguments, None


def tool_inputs_of(
    calls: dict[int, ToolCallFragments], offered: set[str]
) -> tuple[list[llm.ToolInput], list[tuple[llm.ToolInput, str]]]:
    """Return the round's calls for HA, and those it must not run, with why.

    A call that cannot run is marked external, so HA leaves it to the agent,
    which answers it with an error result for the model.
    """
    tool_inputs: list[llm.ToolInput] = []
    rejected: list[tuple[llm.ToolInput, str]] = []
    for index in sorted(calls):
        call = calls[index]
        arguments, error = parse_tool_call(call, offered)
        tool_input = llm.ToolInput(
            tool_name=call.name,
            tool_args=arguments,
            id=call.id or ulid_now(),
            external=error is not None,
        )
        tool_inputs.append(tool_input)
        if error is not None:
            _LOGGER.debug("Not running tool call %s: %s", call.name, error)
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
    announce: Callable[[list[str], str | None], str | None]
    announced: bool = False
    fault: str | None = None
    timings: list[dict[str, Any]] = field(default_factory=list)

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
        calls: dict[int, ToolCallFragments] = {}
        streamed_text = False
        try:
            async for chunk in client.async_stream_chat(
                payload, float(self.options[CONF_REQUEST_TIMEOUT])
            ):
                if timings := chunk.get("timings"):
                    turn.record_timings(timings)
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    if text := delta.get("content"):
                        streamed_text = True
                        yield {"content": text}
                    if thinking := delta.get("reasoning_content"):
                        yield {"thinking_content": thinking}
                    collect_tool_calls(calls, delta.get("tool_calls") or ())
        except LlamaServerError as err:
            turn.fault = FAULT_KINDS[type(err)]
            _LOGGER.warning("llama-server at %s failed: %r", client.url, err)
            message = fault_message(turn.fault, turn.language)
            # Text already streamed stays; the explanation follows it.
            yield {"content": f" {message}" if streamed_text else message}
            return
        if not calls or not offered:
            if not streamed_text:
                # Something must be said: a voice pipeline cannot speak nothing.
                yield {"content": fault_message("empty", turn.language)}
            return
        tool_inputs, rejected = tool_inputs_of(calls, offered)
        if not turn.announced:
            runnable = [t.tool_name for t in tool_inputs if not t.external]
            if phrase := turn.announce(runnable, turn.language):
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
