"""A thread's earlier turns, rebuilt from the record for an agent that forgot them.

Home Assistant forgets a chat log five minutes after its last message, and
at a restart. The thread's next turn then starts from what the record kept:
each turn's question, answers, and tool calls with their arguments and
results, as the chat log held them. Faults are not rebuilt: they were the
agent's words about itself, not the conversation.
"""

from collections.abc import Iterable, Iterator
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.helpers import llm

# How much of a thread is rebuilt, in characters (a proxy for tokens: about
# four characters to a token, so some 6,000 tokens); the newest turns are kept.
HISTORY_BUDGET: Final = 24_000

type Turn = list[dict[str, Any]]


def left_out_note(count: int) -> str:
    """What the model reads before the first kept question when some were cut."""
    return (
        f"[{count} earlier turns of this conversation are left out to fit"
        " the context.]\n\n"
    )


def turns_of(entries: Iterable[dict[str, Any]]) -> Iterator[Turn]:
    """The record's entries grouped into turns, each starting with a question."""
    turn: Turn = []
    for entry in entries:
        if entry["kind"] == "user" and turn:
            yield turn
            turn = []
        if turn or entry["kind"] == "user":
            turn.append(entry)
    if turn:
        yield turn


def turn_size(turn: Turn) -> int:
    """The characters a turn puts into the prompt."""
    return sum(
        len(entry.get("text") or "")
        + len(entry.get("result") or "")
        + len(str(entry.get("arguments") or ""))
        for entry in turn
    )


def newest_within(turns: list[Turn], budget: int) -> tuple[list[Turn], int]:
    """The newest turns that fit the budget, in order, and how many were cut."""
    kept: list[Turn] = []
    used = 0
    for turn in reversed(turns):
        used += turn_size(turn)
        if used > budget:
            break
        kept.append(turn)
    kept.reverse()
    return kept, len(turns) - len(kept)


def turn_content(agent_id: str, turn: Turn) -> Iterator[conversation.Content]:
    """A turn's chat log content: the question, answers, tool calls and results."""
    for entry in turn:
        kind = entry["kind"]
        if kind == "user":
            yield conversation.UserContent(content=entry.get("text") or "")
        elif kind == "assistant" and entry.get("text"):
            yield conversation.AssistantContent(
                agent_id=agent_id, content=entry["text"]
            )
        elif kind == "tool_call":
            # The record keeps no call id; the entry's id is as stable.
            call_id = f"call_{entry['entry_id']}"
            yield conversation.AssistantContent(
                agent_id=agent_id,
                tool_calls=[
                    llm.ToolInput(
                        tool_name=entry["tool_name"],
                        tool_args=entry["arguments"],
                        id=call_id,
                    )
                ],
            )
            yield conversation.ToolResultContent(
                agent_id=agent_id,
                tool_call_id=call_id,
                tool_name=entry["tool_name"],
                result=llm.ToolResult(
                    data={"result": entry.get("result") or ""},
                    error=bool(entry.get("error")),
                ),
            )


def rebuilt_history(
    agent_id: str, entries: Iterable[dict[str, Any]], budget: int = HISTORY_BUDGET
) -> list[conversation.Content]:
    """The thread's earlier turns as chat log content, newest kept within `budget`."""
    kept, cut = newest_within(list(turns_of(entries)), budget)
    content = [item for turn in kept for item in turn_content(agent_id, turn)]
    if cut and content:
        first = content[0]
        assert isinstance(first, conversation.UserContent)
        content[0] = conversation.UserContent(
            content=left_out_note(cut) + first.content
        )
    return content
