"""Tool calls for a template that cannot make them: a reply held to a JSON schema.

The schema has one answer branch, `{"answer": TEXT}`, then one branch per
offered tool, `{"tool": NAME, "arguments": {...}}` with the name as a
`const` and the tool's parameters as the arguments' schema. llama-server
holds the reply to it with a grammar (`response_format`). The reader streams
the answer's text as it comes, decoded, and turns the tool branch into a
call as the native reader does; a reply that breaks the schema (cut short,
no branch, an unknown tool, arguments the tool's schema refuses) is
malformed, all of it.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
import json
import logging
import re
from typing import Any, Final

from ..text import valid_unicode, valid_unicode_data
from .json_schema import schema_error
from .json_string import JsonStringReader
from .stream import Answer, Delta, ToolCallFragments

_LOGGER = logging.getLogger(__name__)

TOOL_KEY: Final = "tool"
ARGUMENTS_KEY: Final = "arguments"
ANSWER_KEY: Final = "answer"
# The opening of the answer branch up to its string's first quote; a
# grammar lets whitespace in between.
ANSWER_START: Final = re.compile(r'\s*\{\s*"answer"\s*:\s*"')


def arguments_schema(
    parameters: Mapping[str, Any], text_budget: int | None = None
) -> dict[str, Any]:
    """A tool's parameters as the schema of its arguments: no property unnamed.

    A tool's voluptuous schema refuses extra keys unless it says otherwise.
    With `text_budget` (characters), its text arguments share half of it, so
    a model that writes on inside one is stopped before the reply's token
    limit cuts the whole call.
    """
    schema = dict(parameters) or {"type": "object", "properties": {}}
    if schema.get("type") != "object":
        return schema
    schema.setdefault("additionalProperties", False)
    properties = schema.get("properties")
    if text_budget and isinstance(properties, dict):
        texts = [
            name
            for name, spec in properties.items()
            if isinstance(spec, dict)
            and spec.get("type") == "string"
            and not {"maxLength", "enum", "const"} & spec.keys()
        ]
        length = max(text_budget // (2 * len(texts)), 1) if texts else 0
        schema["properties"] = properties | {
            name: properties[name] | {"maxLength": length} for name in texts
        }
    return schema


def tool_schemas(
    tools: list[dict[str, Any]], text_budget: int | None = None
) -> dict[str, dict[str, Any]]:
    """Each offered tool's arguments schema by its name, from the OpenAI specs."""
    return {
        tool["function"]["name"]: arguments_schema(
            tool["function"]["parameters"], text_budget
        )
        for tool in tools
    }


def reply_schema(
    schemas: Mapping[str, dict[str, Any]], answer_length: int | None = None
) -> dict[str, Any]:
    """The schema of a reply: the answer's branch, then one per tool, in order.

    The answer comes first: with the same prompt, a small model answered a
    plain question without a needless tool call more often (docs/benchmarks.md).
    `answer_length` bounds the answer's characters, so the grammar closes the
    string before the reply's token limit would cut it (then unreadable).
    """
    tool_branches = [
        {
            "type": "object",
            "properties": {TOOL_KEY: {"const": name}, ARGUMENTS_KEY: arguments},
            "required": [TOOL_KEY, ARGUMENTS_KEY],
            "additionalProperties": False,
        }
        for name, arguments in schemas.items()
    ]
    answer_branch = {
        "type": "object",
        "properties": {
            ANSWER_KEY: {"type": "string"}
            | ({"maxLength": answer_length} if answer_length else {})
        },
        "required": [ANSWER_KEY],
        "additionalProperties": False,
    }
    return {"anyOf": [answer_branch, *tool_branches]}


def response_format(
    schemas: Mapping[str, dict[str, Any]], answer_length: int | None = None
) -> dict[str, Any]:
    """llama-server's `response_format` holding the reply to `reply_schema`."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "reply",
            "strict": True,
            "schema": reply_schema(schemas, answer_length),
        },
    }


def could_open_answer(text: str) -> bool:
    """Whether `text` may still become the opening of the answer branch."""
    rest = text.lstrip()
    if not rest or rest == "{":
        return True
    if rest[0] != "{":
        return False
    rest = rest[1:].lstrip()
    key = f'"{ANSWER_KEY}"'
    if len(rest) <= len(key):
        return key.startswith(rest)
    rest = rest.removeprefix(key).lstrip() if rest.startswith(key) else "x"
    return rest in ("", ":") or (rest[0] == ":" and not rest[1:].strip())


@dataclass
class ConstrainedAnswer:
    """One constrained reply as its chunks arrive, read like `Answer`.

    `read` returns the answer's text, decoded, as content deltas (thinking
    passes through); `named_calls` checks the whole reply and returns its
    tool call, if it is one. Any fault makes the reply malformed.
    """

    schemas: Mapping[str, dict[str, Any]]
    chunks: Answer = field(default_factory=Answer)
    # The reply's JSON text so far, and the answer's text streamed of it.
    text: str = ""
    streamed: list[str] = field(default_factory=list)
    answer: JsonStringReader | None = None
    # False once the reply cannot be the answer branch: it is read at the end.
    may_be_answer: bool = True
    broken: int = 0

    @property
    def malformed(self) -> int:
        """Parts of the reply that could not be read; any makes it unusable."""
        return self.chunks.malformed + self.broken

    @property
    def timings(self) -> dict[str, int | float]:
        """llama-server's timings of the reply."""
        return self.chunks.timings

    @property
    def finish_reason(self) -> str | None:
        """The last finish reason the server gave."""
        return self.chunks.finish_reason

    def read(self, chunk: Mapping[str, Any] | None) -> list[Delta]:
        """Return the chunk's answer text and thinking as deltas; keep the rest."""
        deltas: list[Delta] = []
        for delta in self.chunks.read(chunk):
            if "content" not in delta:
                deltas.append(delta)
            elif text := self._take(delta["content"]):
                deltas.append({"content": text})
        return deltas

    def _take(self, piece: str) -> str:
        """Add a piece of the JSON text; return the answer text it completes."""
        self.text += piece
        if self.answer is not None:
            decoded = self.answer.feed(piece)
        elif self.may_be_answer and (opening := ANSWER_START.match(self.text)):
            self.answer = JsonStringReader()
            decoded = self.answer.feed(self.text[opening.end() :])
        else:
            self.may_be_answer = self.may_be_answer and could_open_answer(self.text)
            return ""
        decoded = valid_unicode(decoded)
        self.streamed.append(decoded)
        return decoded

    def named_calls(self) -> list[ToolCallFragments]:
        """Return the reply's tool call; none for an answer or a malformed reply."""
        reply, error = self._checked_reply()
        if error is not None:
            _LOGGER.debug("Unreadable constrained reply (%s): %.200r", error, self.text)
            self.broken += 1
            return []
        if ANSWER_KEY in reply:
            return []
        return [ToolCallFragments(name=reply[TOOL_KEY], decoded=reply[ARGUMENTS_KEY])]

    def _checked_reply(self) -> tuple[dict[str, Any], str | None]:
        """The whole reply, or why it breaks the schema."""
        try:
            reply = json.loads(self.text)
        except (ValueError, RecursionError):
            return {}, f"not JSON (finish reason {self.finish_reason})"
        if not isinstance(reply, dict):
            return {}, "not a JSON object"
        if reply.keys() == {ANSWER_KEY}:
            return reply, self._answer_error(reply[ANSWER_KEY])
        if reply.keys() != {TOOL_KEY, ARGUMENTS_KEY}:
            return {}, "neither a tool call nor an answer"
        name = reply[TOOL_KEY]
        if not isinstance(name, str) or name not in self.schemas:
            return {}, f"unknown tool {str(name)[:100]!r}"
        try:
            error = schema_error(reply[ARGUMENTS_KEY], self.schemas[name])
            # Half a surrogate pair becomes U+FFFD, as in a native call's arguments.
            reply[ARGUMENTS_KEY] = valid_unicode_data(reply[ARGUMENTS_KEY])
        except RecursionError:
            # json.loads reads deeper than Python's recursion limit.
            error = "arguments nest too deeply"
        return reply, error

    def _answer_error(self, answer: object) -> str | None:
        """Why the answer branch's text is not what was streamed; None when it is."""
        if not isinstance(answer, str):
            return "the answer is not a string"
        if self.answer is None or "".join(self.streamed) != valid_unicode(answer):
            return "the answer is not the text streamed"
        return None
