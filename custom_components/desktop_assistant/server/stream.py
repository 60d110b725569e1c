"""One reader of llama-server's streamed chat chunks.

Text, thinking, tool calls, the finish reason and the timings, for the
agent's tool loop and for structured generation alike.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from homeassistant.components import conversation

from .reported import checked_timings

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
    A chunk that is not an object (the client's None), and parts of a chunk
    of the wrong type, are skipped and counted in `malformed`.
    """

    calls: list[ToolCallFragments] = field(default_factory=list)
    by_index: dict[int, ToolCallFragments] = field(default_factory=dict)
    malformed: int = 0
    # The last finish reason a choice gave ("stop", "length", "tool_calls").
    finish_reason: str | None = None
    # llama-server's timings (token counts and speeds), from the last chunk.
    timings: dict[str, int | float] = field(default_factory=dict)

    def read(self, chunk: Mapping[str, Any] | None) -> list[Delta]:
        """Return the chunk's text and thinking as deltas; keep the rest."""
        deltas: list[Delta] = []
        if not isinstance(chunk, Mapping):
            self.malformed += 1
            return deltas
        if (timings := timings_of(chunk)) is not None:
            self.timings.update(timings)
        choices = chunk.get("choices")
        if choices is None:
            return deltas
        if not isinstance(choices, list):
            self.malformed += 1
            return deltas
        for choice in choices:
            deltas += self._read_choice(choice)
        return deltas

    def _read_choice(self, choice: object) -> list[Delta]:
        """Return one choice's text and thinking; keep its calls and finish reason."""
        if not isinstance(choice, dict):
            self.malformed += 1
            return []
        self._finish(choice.get("finish_reason"))
        delta = choice.get("delta")
        if delta is None:
            return []
        if not isinstance(delta, dict):
            self.malformed += 1
            return []
        deltas: list[Delta] = []
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

    def _finish(self, reason: object) -> None:
        if isinstance(reason, str) and reason:
            self.finish_reason = reason
        elif reason is not None:
            self.malformed += 1

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


def timings_of(chunk: Mapping[str, Any]) -> dict[str, int | float] | None:
    """llama-server's timings (token counts and speeds) in a chunk, checked, if any."""
    return checked_timings(chunk.get("timings"))
