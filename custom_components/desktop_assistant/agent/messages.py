"""The chat messages of a request: a cacheable prefix, a bounded history, the current turn."""

from collections.abc import Iterable, Sequence
import json
import re
from typing import Any

from homeassistant.components import conversation
from homeassistant.helpers import llm
from homeassistant.helpers.json import json_dumps
import probatio as vol

# The clock line HA adds to the system prompt when no offered tool tells the
# time (llm.DATE_TIME_PROMPT); it is moved out of the cached prefix.
DATE_TIME_LINE = re.compile(
    "\n?"
    + ".+?".join(
        re.escape(part) for part in re.split(r"{{.*?}}", llm.DATE_TIME_PROMPT.strip())
    )
)


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
    content: list[conversation.Content],
    max_history: int,
    tool_history: bool = False,
    attached: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Return the chat messages for the current request.

    Earlier turns contribute their questions and final replies, at most
    `max_history` messages, starting with a user message; with
    `tool_history` (a Chat thread) their tool calls and results too. A voice
    or Assist conversation keeps only the words, so its window holds more
    of the conversation. The current turn is sent whole. The clock line, if
    any, is moved from the system prompt to the current question, so the
    prefix stays cacheable. `attached` (an AI task's attachments as message
    parts) follow the current question's text.
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
        earlier_exchanges(content[1:turn_start], tool_history)[-max_history:]
        if max_history
        else []
    )
    # The window starts at a question, never inside an exchange.
    while history and history[0]["role"] != "user":
        history = history[1:]
    current = [message_of(item) for item in content[turn_start:]]
    if clock:
        current[0]["content"] = f"{current[0]['content']}\n\n{clock}"
    if attached:
        text = {"type": "text", "text": current[0]["content"]}
        current[0]["content"] = [text, *attached]
    return [{"role": "system", "content": system}, *history, *current]


def earlier_exchanges(
    content: Iterable[conversation.Content], tool_history: bool
) -> list[dict[str, Any]]:
    """Return each earlier question with what answered it; unanswered ones drop.

    With `tool_history` an exchange keeps its tool calls and their results,
    so the model knows what it looked up and did; without, the question and
    the final reply only. It counts as answered once it has a reply.
    """
    exchanges: list[tuple[list[dict[str, Any]], bool]] = []
    for item in content:
        if isinstance(item, conversation.UserContent):
            exchanges.append(([message_of(item)], False))
        elif exchanges and isinstance(
            item, (conversation.AssistantContent, conversation.ToolResultContent)
        ):
            messages, answered = exchanges[-1]
            messages.append(message_of(item))
            replied = isinstance(item, conversation.AssistantContent) and bool(
                item.content
            )
            exchanges[-1] = (messages, answered or replied)
    return [
        message
        for messages, answered in exchanges
        if answered
        for message in (messages if tool_history else words_only(messages))
    ]


def words_only(exchange: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An exchange's question and its final reply, the text the person heard."""
    question, *answers = exchange
    replies = [m for m in answers if m["role"] == "assistant" and m["content"]]
    return [question, {"role": "assistant", "content": replies[-1]["content"]}]


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
