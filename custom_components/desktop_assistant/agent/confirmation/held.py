"""The calls that wait for a person's yes, and who was asked."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import Context

from ...tools import ToolSpec
from .words import phrases_for


@dataclass(frozen=True, slots=True)
class HeldCall:
    """A call to a changing tool, and its arguments.

    A tool file's (`spec`, as it was loaded) checks the yes itself when it
    runs; any other LLM tool's (`tool_name`, held by the agent for a model
    asked for constrained calls) runs only once the agent heard the yes.
    """

    spec: ToolSpec | None
    # Every parameter's text, as the runner receives it: what is compared.
    values: dict[str, str]
    # The arguments as the model wrote them, for calling it again.
    arguments: dict[str, Any] = field(compare=False, default_factory=dict)
    tool_name: str = ""
    # What the question calls a tool that is not a tool file.
    title: str = field(compare=False, default="")

    def question(self, language: str | None) -> str:
        """Return the tool file's question, or one naming the tool and arguments."""
        if self.spec is not None and (
            question := self.spec.question(language, self.values)
        ):
            return question
        tool = self.spec.name if self.spec is not None else self.title
        phrases = phrases_for(language)
        arguments = ", ".join(
            f"{name.replace('_', ' ')} {value}"
            for name, value in self.values.items()
            if value
        )
        if not arguments:
            return phrases.generic.format(tool=tool)
        return phrases.generic_with.format(tool=tool, arguments=arguments)


@dataclass(frozen=True, slots=True)
class Asker:
    """Who was asked: the signed-in user and the device they spoke to.

    A conversation id is only a name: another device or user can continue
    the same conversation, and their words are no answer to our question.
    """

    user_id: str | None
    device_id: str | None


def asker_of(context: Context | None, device_id: str | None) -> Asker:
    """Return who speaks in a turn, from its context and device."""
    return Asker(context.user_id if context else None, device_id)


@dataclass(slots=True)
class Pending:
    """The calls waiting for the person's answer in one conversation."""

    # How many turns the person had taken when the calls were made: the
    # answer must be the next one.
    user_turns: int
    language: str | None
    expires: datetime
    asker: Asker
    calls: list[HeldCall] = field(default_factory=list)

    def question(self, language: str | None) -> str:
        """Return the question for every held call, one answer for all."""
        questions = [call.question(language) for call in self.calls]
        if len(questions) == 1:
            return questions[0]
        return " ".join([*questions, phrases_for(language).several])


def user_turns(chat_log: conversation.ChatLog) -> list[conversation.UserContent]:
    """Return what the person said in the conversation, turn by turn."""
    return [
        item for item in chat_log.content if isinstance(item, conversation.UserContent)
    ]
