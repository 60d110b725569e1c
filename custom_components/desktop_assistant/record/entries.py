"""What one agent turn leaves in the record, read from its chat log."""

from collections.abc import Sequence

from homeassistant.components import conversation
from homeassistant.helpers import llm
from homeassistant.helpers.json import json_dumps

from .models import MAX_TOOL_RESULT, Entry


def user_entry(content: conversation.UserContent, spoken: bool) -> Entry:
    """What the person said (a transcript) or typed."""
    return Entry(
        kind="user",
        at=content.created.timestamp(),
        text=content.content,
        source="speech" if spoken else "text",
    )


def turn_entries(
    content: Sequence[conversation.Content],
    fault: str | None,
    fault_sentence: str | None,
    now: float,
    *,
    unfinished: str = "",
    withheld: str = "",
) -> list[Entry]:
    """The entries of the chat log content after the person's question.

    Replies are the assistant's texts; each tool call is one entry with its
    result (cut to MAX_TOOL_RESULT characters). A fault ends the turn: the
    fault message the agent appended to the reply is split off into a fault
    entry, and the reply before it is marked interrupted. The text of a
    reply the turn stopped in (`unfinished`) is such a reply too, and so is
    the model's reply the agent said its fault sentence instead of
    (`withheld`), kept just before the fault.
    """
    results = {
        item.tool_call_id: item
        for item in content
        if isinstance(item, conversation.ToolResultContent)
    }
    entries: list[Entry] = []
    for item in content:
        if not isinstance(item, conversation.AssistantContent):
            continue
        at = item.created.timestamp()
        if item.content:
            entries.append(Entry(kind="assistant", at=at, text=item.content))
        for call in item.tool_calls or ():
            result = results.get(call.id)
            entries.append(
                Entry(
                    kind="tool_call",
                    at=result.created.timestamp() if result else at,
                    tool_name=call.tool_name,
                    tool_arguments=dict(call.tool_args),
                    tool_result=None if result is None else result_text(result),
                    tool_error=None if result is None else result.result.error,
                )
            )
    if unfinished.strip():
        entries.append(
            Entry(kind="assistant", at=now, text=unfinished.strip(), interrupted=True)
        )
    if fault is not None:
        entries = split_fault(entries, fault, fault_sentence, now, withheld)
    return entries


def result_text(content: conversation.ToolResultContent) -> str:
    """A tool result as text, cut to MAX_TOOL_RESULT characters."""
    data = content.result.data if isinstance(content.result, llm.ToolResult) else None
    if (
        isinstance(data, dict)
        and data.keys() == {"result"}
        and isinstance(data["result"], str)
    ):
        text = data["result"]
    else:
        text = json_dumps(data)
    return text[:MAX_TOOL_RESULT]


def split_fault(
    entries: list[Entry],
    fault: str,
    message: str | None,
    now: float,
    withheld: str = "",
) -> list[Entry]:
    """Split the fault message off the last reply; mark what remains interrupted."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry.kind != "assistant" or entry.text is None:
            continue
        if not message or not entry.text.endswith(message):
            break
        said = entry.text[: -len(message)].strip()
        fault_entries = _fault_entries(entry.at, fault, message, withheld)
        if not said:
            return [*entries[:index], *fault_entries, *entries[index + 1 :]]
        reply = Entry(kind="assistant", at=entry.at, text=said, interrupted=True)
        return [*entries[:index], reply, *fault_entries, *entries[index + 1 :]]
    return [*entries, *_fault_entries(now, fault, None, withheld)]


def _fault_entries(
    at: float, fault: str, message: str | None, withheld: str
) -> list[Entry]:
    """The fault's entry, after the model's reply it replaced, if any."""
    fault_entry = Entry(kind="fault", at=at, text=message, fault=fault)
    if not withheld:
        return [fault_entry]
    reply = Entry(kind="assistant", at=at, text=withheld, interrupted=True)
    return [reply, fault_entry]
