"""An answer that repeats a tool's own words: its error or its description.

A small model often answers with the text of a failed tool's error ("No
exposed entities found in domain(s): rome") or with a tool's description
instead of calling it. Those are the tools' words, not an answer: the person
hears our sentence naming what failed instead. A round's text is held back
only while it could still be such a repetition, so an answer streams as
before once its words part from every tool's.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
import re
from typing import Any, Final, Literal

from homeassistant.components import conversation
from homeassistant.helpers import llm

from ..text import words

# A repetition shorter than this many words is not judged one unless it is
# the tool's whole text: a real answer may start with a few of its words.
MIN_ECHO_WORDS: Final = 4
# An answer that streamed is still a repetition when this many words in a
# row, and at least half of its words, are a tool's ("You can use this tool
# to answer questions about the current state, value, or mode of devices,
# sensors, entities, or areas."): the sentence then follows it.
MIN_RUN_WORDS: Final = 8
# The reason in the sentence is the first line of the error, cut to this.
MAX_REASON: Final = 160
# What a failed tool's result may hold its error text under: HA's tools'
# `error`, HA's exception `error_text`, a tool file's `result`.
ERROR_KEYS: Final = ("error_text", "error", "result")


@dataclass(frozen=True, slots=True)
class ToolWords:
    """A text of a tool's own that an answer must not repeat."""

    # The fault it makes: a failed tool's error, or a tool's description.
    kind: Literal["tool_failed", "tool_described"]
    # The tool as the person hears it named.
    tool: str
    text: str
    # Why the tool failed, as its error says; empty for a description.
    reason: str = ""


def tool_label(tool_name: str, title: str | None = None) -> str:
    """A tool's title, or its name without the API and domain prefixes."""
    return title or tool_name.rsplit("__", 1)[-1]


def description_words(tools: Iterable[llm.Tool]) -> list[ToolWords]:
    """The descriptions of the tools the model is offered."""
    return [
        ToolWords("tool_described", tool_label(tool.name, tool.title), description)
        for tool in tools
        if (description := tool.description)
    ]


def error_words(
    content: Sequence[conversation.Content], tools: Iterable[llm.Tool]
) -> list[ToolWords]:
    """The error texts of the tools that failed since the person's question."""
    titles = {tool.name: tool.title for tool in tools}
    since_question: list[conversation.Content] = []
    for item in content:
        if isinstance(item, conversation.UserContent):
            since_question = []
        else:
            since_question.append(item)
    found: list[ToolWords] = []
    for item in since_question:
        if not isinstance(item, conversation.ToolResultContent):
            continue
        if not item.result.error or not (texts := _error_texts(item.result.data)):
            continue
        label = tool_label(item.tool_name, titles.get(item.tool_name))
        reason = texts[0].strip().splitlines()[0][:MAX_REASON].rstrip(" .")
        found += [
            ToolWords("tool_failed", label, text, reason)
            for text in texts + _before_quotes(texts)
        ]
    return found


def _before_quotes(texts: list[str]) -> list[str]:
    """Each error's own words before the first value it quotes, when that says enough.

    Errors quote what the model sent ("No exposed entities matched name
    'kitchen'"); a model repeating the error may misquote the value, so the
    words before it alone are enough to know the echo.
    """
    found = []
    for text in texts:
        opening = re.split(r"['\"]", text, maxsplit=1)[0]
        if opening != text and len(words(opening)) >= MIN_ECHO_WORDS:
            found.append(opening)
    return found


def tool_words(chat_log: conversation.ChatLog) -> list[ToolWords]:
    """What an answer in this chat log must not repeat: the tools' own words."""
    if chat_log.llm_api is None:
        return []
    tools = chat_log.llm_api.tools
    return error_words(chat_log.content, tools) + description_words(tools)


def _error_texts(data: Any) -> list[str]:
    """A failed result's error texts, with and without their `error:` mark."""
    if not isinstance(data, dict):
        return []
    texts: list[str] = []
    for key in ERROR_KEYS:
        if isinstance(text := data.get(key), str) and text.strip():
            bare = text.strip()
            if bare.casefold().startswith("error:"):
                bare = bare[len("error:") :].strip()
            texts += [bare] if bare == text.strip() else [bare, text.strip()]
    return texts


@dataclass
class EchoGuard:
    """Holds back a round's text while it may repeat one of the tools' texts.

    `pass_on` takes each piece of text as it streams and returns what may be
    shown now; `end` returns what is still held once the round ended. Once
    `echo` is set, nothing more is passed on and `held` keeps the whole
    text, for the record.
    """

    candidates: list[ToolWords]
    held: str = ""
    # All the round's text, held or shown.
    text: str = ""
    echo: ToolWords | None = None
    # False once the text parted from every candidate: it streams freely.
    holding: bool = True
    _words: list[list[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._words = [words(candidate.text) for candidate in self.candidates]
        self.holding = any(self._words)

    def pass_on(self, text: str) -> str:
        """Return the text that may be shown now, holding back a possible echo."""
        self.text += text
        if not self.holding:
            return text
        self.held += text
        if self.echo is not None:
            return ""
        said = words(self.held)
        if (echo := self._repeated(said)) is not None:
            self.echo = echo
            return ""
        if any(_may_become(said, tool) for tool in self._words):
            return ""
        self.holding = False
        return self.held

    def end(self) -> str:
        """Return the held text when the round ended, unless it is an echo.

        Text already shown is an echo too when it shares a long run of words
        with a tool's (`_paraphrased`).
        """
        if self.echo is not None:
            return ""
        if not self.holding:
            self.echo = self._paraphrased(words(self.text))
            return ""
        said = words(self.held)
        for candidate, tool in zip(self.candidates, self._words, strict=True):
            if said and (
                said == tool
                or (len(said) >= MIN_ECHO_WORDS and _may_become(said, tool))
            ):
                self.echo = candidate
                return ""
        self.holding = False
        return self.held

    def _paraphrased(self, said: list[str]) -> ToolWords | None:
        """The candidate whose words make most of the text, in one long run."""
        for candidate, tool in zip(self.candidates, self._words, strict=True):
            run = _longest_run(said, tool)
            if run >= MIN_RUN_WORDS and 2 * run >= len(said):
                return candidate
        return None

    def _repeated(self, said: list[str]) -> ToolWords | None:
        """The candidate the text repeats whole and goes on past, if any."""
        for candidate, tool in zip(self.candidates, self._words, strict=True):
            if (
                len(tool) >= MIN_ECHO_WORDS
                and len(said) > len(tool)
                and said[: len(tool)] == tool
            ):
                return candidate
        return None


def _may_become(said: list[str], tool: list[str]) -> bool:
    """Whether the text so far starts the tool's text (its last word may be cut)."""
    if not said:
        return True
    if len(said) > len(tool):
        return False
    *whole, last = said
    return whole == tool[: len(whole)] and tool[len(whole)].startswith(last)


def _longest_run(said: list[str], tool: list[str]) -> int:
    """How many words in a row the two share, at most."""
    best = 0
    previous = [0] * (len(tool) + 1)
    for word in said:
        current = [0] * (len(tool) + 1)
        for index, other in enumerate(tool, start=1):
            if word == other:
                current[index] = previous[index - 1] + 1
                best = max(best, current[index])
        previous = current
    return best
