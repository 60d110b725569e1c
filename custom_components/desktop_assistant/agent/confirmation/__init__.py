"""Tools that change things run only after a person's yes, in the next turn.

A call to a tool file with `changes = true` is held, not run: the tool
answers `confirmation needed: <question>` and the call waits, per
conversation, for the person's next words. Only a clear yes in the very next
turn of that conversation lets the same call (same tool, same arguments) run,
once, and only when it comes from the user and device that were asked;
anything else, a no included, leaves it unrun. The rule is applied where
the tool runs (`ConfigFolderTool`), so it holds for every agent whatever its
model writes: a model's text is never the person's turn. Our own agent adds
the conversation around it: it speaks the question itself, runs the held
calls on a yes and says so briefly on a no.

On a server asked for constrained calls the agent also holds, itself,
every call to one of Home Assistant's tools whose annotations do not say
read-only (`held_by_agent`, `hold`): a model that cannot call tools well
changes nothing unasked; the yes runs it as a tool file's.

`Confirmations` is the one entry point: the gate of the tool, and the ask,
answer, cancel, hold and held-this-turn of the agent's turn.
"""

from collections.abc import AsyncGenerator
from datetime import timedelta
from functools import partial
import json
import logging
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.conversation.chat_log import current_chat_log
from homeassistant.core import callback
from homeassistant.helpers import chat_session, llm
from homeassistant.util import dt as dt_util

from ...const import DEFAULT_CONFIRM_TIMEOUT
from ...llm import tool_file_name
from ...tools import ToolSpec
from ..spoken import async_say
from .held import Asker, HeldCall, Pending, asker_of, user_turns
from .words import Reply, classify, phrases_for

_LOGGER = logging.getLogger(__name__)

NEEDED = "confirmation needed: "


class Confirmations:
    """The held calls of every conversation; each expires or ends with it.

    The one entry point of confirmation: `gate` for the tool, `async_answer`
    and `async_ask` for the agent's turn, `held_this_turn` for its loop.
    """

    def __init__(self) -> None:
        """Start with nothing held."""
        self._pending: dict[str, Pending] = {}
        # Conversations whose end is already set to cancel their calls.
        self._watched: set[str] = set()

    def get(self, conversation_id: str) -> Pending | None:
        """Return the conversation's held calls, unless they expired."""
        pending = self._pending.get(conversation_id)
        if pending is not None and dt_util.utcnow() >= pending.expires:
            _LOGGER.debug("Held calls of %s expired", conversation_id)
            del self._pending[conversation_id]
            return None
        return pending

    @callback
    def cancel(self, conversation_id: str) -> None:
        """Forget the conversation's held calls."""
        self._pending.pop(conversation_id, None)

    @callback
    def gate(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        values: dict[str, str],
        llm_context: llm.LLMContext,
    ) -> str | None:
        """Decide a call to a changing tool: None to run it, else the answer.

        It runs when the same call was held in the conversation's previous
        turn and the words since are a clear yes of the user and device that
        were asked; it is then no longer held, so it runs once. Otherwise it
        is held, for whoever speaks now, and the answer asks for confirmation.
        """
        chat_log = current_chat_log.get()
        if chat_log is None:
            return (
                f"error: {spec.name} changes things, so it runs only after a "
                "person's yes in a conversation"
            )
        conversation_id = chat_log.conversation_id
        language = llm_context.language
        asker = asker_of(llm_context.context, llm_context.device_id)
        said = user_turns(chat_log)
        call = HeldCall(spec, values, arguments)
        pending = self.get(conversation_id)
        if (
            pending is not None
            and call in pending.calls
            and len(said) == pending.user_turns + 1
            and pending.asker == asker
            and classify(said[-1].content, pending.language) is Reply.YES
        ):
            pending.calls.remove(call)
            if not pending.calls:
                self.cancel(conversation_id)
            _LOGGER.info(
                "Running %s after a yes in conversation %s: %s",
                spec.name,
                conversation_id,
                values,
            )
            return None
        return self._held(chat_log, call, language, asker)

    @callback
    def hold(
        self, chat_log: conversation.ChatLog, call: HeldCall, language: str | None
    ) -> str:
        """Hold a call the agent runs only after a yes; the answer that says so."""
        assert chat_log.llm_api is not None
        llm_context = chat_log.llm_api.llm_context
        asker = asker_of(llm_context.context, llm_context.device_id)
        return self._held(chat_log, call, language, asker)

    def _held(
        self,
        chat_log: conversation.ChatLog,
        call: HeldCall,
        language: str | None,
        asker: Asker,
    ) -> str:
        """Hold the call in this turn, for `asker`; the answer asking for the yes."""
        conversation_id = chat_log.conversation_id
        said = len(user_turns(chat_log))
        pending = self.get(conversation_id)
        if pending is None or pending.user_turns != said:
            pending = self._hold(conversation_id, said, language, asker)
        if call not in pending.calls:
            pending.calls.append(call)
        return NEEDED + call.question(language)

    def _hold(
        self, conversation_id: str, turns: int, language: str | None, asker: Asker
    ) -> Pending:
        pending = Pending(
            user_turns=turns,
            language=language,
            expires=dt_util.utcnow() + timedelta(seconds=DEFAULT_CONFIRM_TIMEOUT),
            asker=asker,
        )
        if conversation_id not in self._watched and (
            session := chat_session.current_session.get()
        ):
            self._watched.add(conversation_id)
            session.async_on_cleanup(partial(self._ended, conversation_id))
        self._pending[conversation_id] = pending
        return pending

    @callback
    def _ended(self, conversation_id: str) -> None:
        self._watched.discard(conversation_id)
        self.cancel(conversation_id)

    def held_this_turn(self, chat_log: conversation.ChatLog) -> Pending | None:
        """Return the calls held in the chat log's current turn, if any."""
        pending = self.get(chat_log.conversation_id)
        if pending is None or pending.user_turns != len(user_turns(chat_log)):
            return None
        return pending

    def ask(
        self, chat_log: conversation.ChatLog, language: str | None, timeout: float
    ) -> str | None:
        """Return the question for this turn's held calls, now being asked.

        The answer is expected in the question's language, within `timeout`
        seconds from now.
        """
        if (pending := self.held_this_turn(chat_log)) is None:
            return None
        pending.language = language
        pending.expires = dt_util.utcnow() + timedelta(seconds=timeout)
        return pending.question(language)

    def answer(
        self, chat_log: conversation.ChatLog, asker: Asker
    ) -> tuple[Reply, list[HeldCall]]:
        """Read the person's words as the answer to the previous turn's question.

        A yes returns the calls to run, still held for the tool's own check;
        a no or anything else cancels them. Without a question there is
        nothing to answer: OTHER, no calls. Words from another user or device
        than the one asked are no answer: they take the turn the answer was
        due in, so the calls are dropped (never left waiting past that turn)
        and the words are a new question.
        """
        said = user_turns(chat_log)
        pending = self.get(chat_log.conversation_id)
        if (
            pending is None
            or len(said) != pending.user_turns + 1
            or pending.asker != asker
        ):
            if pending is not None and pending.asker != asker:
                _LOGGER.info(
                    "Held calls of %s dropped: answered by another user or device",
                    chat_log.conversation_id,
                )
            self.cancel(chat_log.conversation_id)
            return Reply.OTHER, []
        reply = classify(said[-1].content, pending.language)
        if reply is not Reply.YES:
            self.cancel(chat_log.conversation_id)
            return reply, []
        return reply, list(pending.calls)

    async def async_answer(
        self,
        chat_log: conversation.ChatLog,
        user_input: conversation.ConversationInput,
        agent_id: str,
        language: str | None,
    ) -> bool:
        """Take the person's words as the answer to the agent's question, if any.

        On a yes the held calls run as they were asked about, and the model
        then says how they went; on a no nothing runs and the agent says so,
        which ends the turn: True. Anything else is a new question.
        """
        asker = asker_of(user_input.context, user_input.device_id)
        reply, confirmed = self.answer(chat_log, asker)
        if reply is Reply.NO:
            await async_say(agent_id, chat_log, phrases_for(language).cancelled)
            return True
        if confirmed:
            await _async_run_confirmed(agent_id, chat_log, confirmed)
            # Whatever was not run now (a tool reloaded away) is not run later.
            self.cancel(chat_log.conversation_id)
        return False

    async def async_ask(
        self,
        chat_log: conversation.ChatLog,
        agent_id: str,
        language: str | None,
        answer_within: float,
    ) -> None:
        """End a turn whose tool calls were held with the question about them.

        The answer is expected within `answer_within` seconds.
        """
        if question := self.ask(chat_log, language, answer_within):
            await async_say(agent_id, chat_log, question)


def held_by_agent(api: llm.APIInstance | None) -> dict[str, llm.Tool]:
    """The offered tools that change things and do not ask for the yes themselves.

    Home Assistant's intents and tools whose annotations do not say
    read-only (`HassTurnOff`, `HassCancelAllTimers`, ...), by name; a tool
    file asks itself (`gate`).
    """
    return {
        tool.name: tool
        for tool in (api.tools if api else ())
        if not tool.annotations.read_only and tool_file_name(tool) is None
    }


def held_call(tool: llm.Tool, arguments: dict[str, Any]) -> HeldCall:
    """A call of a tool the agent holds, named in the question by its title."""
    return HeldCall(
        None,
        {
            name: value if isinstance(value, str) else json.dumps(value)
            for name, value in arguments.items()
        },
        arguments,
        tool_name=tool.name,
        title=tool.title or tool.name.rsplit("__", 1)[-1],
    )


async def _async_run_confirmed(
    agent_id: str, chat_log: conversation.ChatLog, calls: list[HeldCall]
) -> None:
    """Call the tools the person said yes to, with the arguments they heard.

    They are called as the model called them, through the chat log's LLM
    API, so they are recorded as tool calls and their results reach the
    model, which then says how they went.
    """
    offered: dict[str, str] = {}
    for tool in chat_log.llm_api.tools if chat_log.llm_api else ():
        offered.setdefault(tool_file_name(tool) or tool.name, tool.name)
    tool_inputs = [
        llm.ToolInput(offered[name], call.arguments)
        for call in calls
        if (name := call.spec.name if call.spec else call.tool_name) in offered
    ]
    if not tool_inputs:
        return

    async def deltas() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant"}
        yield {"tool_calls": tool_inputs}

    async for _content in chat_log.async_add_delta_content_stream(agent_id, deltas()):
        pass
