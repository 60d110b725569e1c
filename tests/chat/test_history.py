"""A thread's history rebuilt from the record's entries, within a budget."""

from typing import Any

from homeassistant.components import conversation

from custom_components.desktop_assistant.chat.history import rebuilt_history

AGENT = "conversation.house"


def thread_entries(turns: int, answer: str = "Answer") -> list[dict[str, Any]]:
    """A recorded thread: each turn a question, a tool call and an answer."""
    entries: list[dict[str, Any]] = []
    for number in range(turns):
        entries += [
            {"entry_id": 3 * number + 1, "kind": "user", "text": f"Question {number}"},
            {
                "entry_id": 3 * number + 2,
                "kind": "tool_call",
                "tool_name": "weather",
                "arguments": {"day": number},
                "result": f"Sunny on day {number}",
                "error": False,
            },
            {"entry_id": 3 * number + 3, "kind": "assistant", "text": answer},
        ]
    return entries


def test_a_turn_comes_back_as_the_chat_log_held_it() -> None:
    fault = {"entry_id": 9, "kind": "fault", "fault": "stream_cut", "text": "Cut."}
    entries = [*thread_entries(1), fault]
    question, call, result, answer = rebuilt_history(AGENT, entries)
    assert isinstance(question, conversation.UserContent)
    assert question.content == "Question 0"
    assert isinstance(call, conversation.AssistantContent)
    assert call.tool_calls is not None
    (tool_input,) = call.tool_calls
    assert (tool_input.tool_name, tool_input.tool_args) == ("weather", {"day": 0})
    assert isinstance(result, conversation.ToolResultContent)
    assert result.tool_call_id == tool_input.id
    assert result.result.data == {"result": "Sunny on day 0"}
    assert isinstance(answer, conversation.AssistantContent)
    assert answer.content == "Answer"


def test_the_newest_turns_are_kept_and_the_cut_is_said() -> None:
    # Each turn is about 1,050 characters; the budget holds three.
    entries = thread_entries(10, answer="x" * 1000)
    content = rebuilt_history(AGENT, entries, budget=3500)
    questions = [c.content for c in content if isinstance(c, conversation.UserContent)]
    assert len(questions) == 3
    assert questions[0].startswith("[7 earlier turns of this conversation are left out")
    assert questions[0].endswith("Question 7")
    assert questions[1:] == ["Question 8", "Question 9"]


def test_everything_that_fits_is_kept_without_a_note() -> None:
    content = rebuilt_history(AGENT, thread_entries(2))
    questions = [c.content for c in content if isinstance(c, conversation.UserContent)]
    assert questions == ["Question 0", "Question 1"]
    assert rebuilt_history(AGENT, []) == []
