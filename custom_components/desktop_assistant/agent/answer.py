"""One spoken question, answered: the turn of an agent from words to result.

The language of the question, the answer to the agent's own question of
the turn before, waking the agent's server, the tool loop, and the fault
said as the answer; the record of the turn, once it has started, ends here.
"""

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent

from ..const import CONF_CONFIRM_TIMEOUT
from ..llm import tool_file_name
from ..record import TurnRecording
from ..runtime import DATA_CONFIRMATIONS, DATA_TOOLS, DesktopAssistantConfigEntry
from ..server.activity import async_get_activity
from ..server.client import ServerUnavailable
from ..server.failover import async_route
from .language import LanguageDetector
from .loop import ToolLoop
from .spoken import async_say, async_spoken_text
from .turn_state import Turn


@dataclass(frozen=True, slots=True)
class Agent:
    """What a turn needs of the agent that answers it."""

    hass: HomeAssistant
    entry: DesktopAssistantConfigEntry
    entity_id: str
    options: dict[str, Any]
    # Set when the household speaks more than the pipeline's language.
    language_detector: LanguageDetector | None = None


async def async_answer(
    agent: Agent,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    recording: TurnRecording | None,
) -> conversation.ConversationResult:
    """Answer one question whose LLM data is in the chat log; end its record."""
    language = user_input.language
    if agent.language_detector is not None:
        language = agent.language_detector.detect(user_input.text, language)
    turn = Turn(
        language=language,
        announce=partial(_async_pick_announcement, agent.hass, chat_log),
    )
    try:
        # Background generation (the nightly pass) steps aside meanwhile.
        with async_get_activity(agent.hass).turn():
            await _async_reply(agent, user_input, chat_log, turn)
        return _async_result(agent, user_input, chat_log, turn)
    except BaseException as err:
        turn.fault = turn.fault or (
            "cancelled" if isinstance(err, asyncio.CancelledError) else "error"
        )
        raise
    finally:
        if recording is not None:
            answered = turn.route.answered if turn.route else None
            recording.async_end(
                turn.fault,
                turn.fault_sentence,
                server=answered.name if answered else None,
                model=answered.model if answered else None,
                unfinished=turn.unfinished,
                withheld=turn.withheld,
            )


def _async_result(
    agent: Agent,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    turn: Turn,
) -> conversation.ConversationResult:
    """Return the turn's answer; a fault says which in `speech_slots`.

    Assist's dialog shows an error response as a red bubble of its own
    after whatever was streamed. So only a fault before any text is an
    error (`failed_to_handle`: the agent could not handle the request),
    its sentence the whole answer; after text the person saw, the
    sentence ends that answer, which stays one.
    """
    if turn.fault and not turn.spoke:
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(
                agent_id=agent.entity_id, content=turn.fault_sentence
            )
        )
    result = conversation.async_get_result_from_chat_log(user_input, chat_log)
    if turn.fault:
        if not turn.spoke:
            result.response.async_set_error(
                intent.IntentResponseErrorCode.FAILED_TO_HANDLE,
                result.response.speech["plain"]["speech"],
            )
        result.response.async_set_speech_slots({"fault": turn.fault})
    return result


async def _async_reply(
    agent: Agent,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    turn: Turn,
) -> None:
    """Answer the question, or the agent's own question about held calls.

    A no to that question ends the turn (see confirmation); a yes runs the
    held calls first. A turn whose tool calls were held ends with the
    question about them.
    """
    confirmations = agent.hass.data[DATA_CONFIRMATIONS]
    if await confirmations.async_answer(
        chat_log, user_input, agent.entity_id, turn.language
    ):
        return
    turn.route = async_route(
        agent.hass, agent.entry, agent.options, chat_log.conversation_id
    )
    waited = await _async_wait_for_asleep(agent, chat_log, turn)
    loop = ToolLoop(agent.hass, agent.entity_id, agent.options)
    await loop.async_run_tool_loop(chat_log, turn)
    if (
        not waited
        and turn.fault == ServerUnavailable.kind
        and turn.route.answered is None
        and await _async_wait_for_asleep(agent, chat_log, turn)
    ):
        # The question found its server just gone to sleep: asked again
        # once it is woken, or the fault is said as before.
        turn.fault = turn.fault_sentence = None
        await loop.async_run_tool_loop(chat_log, turn)
    await confirmations.async_ask(
        chat_log,
        agent.entity_id,
        turn.language,
        float(agent.options[CONF_CONFIRM_TIMEOUT]),
    )


async def _async_wait_for_asleep(
    agent: Agent, chat_log: conversation.ChatLog, turn: Turn
) -> bool:
    """Wake the agent's own server and wait for it when it should; True if so."""
    assert turn.route is not None
    if (asleep := turn.route.server_to_wake()) is None:
        return False
    # Said before the wait, so the person knows why nothing comes yet.
    await async_say(
        agent.entity_id,
        chat_log,
        await async_spoken_text(agent.hass, "waking", turn.language),
    )
    await turn.route.async_wait_for(asleep)
    return True


async def _async_pick_announcement(
    hass: HomeAssistant,
    chat_log: conversation.ChatLog,
    tool_names: list[str],
    language: str | None,
) -> str | None:
    """Return a phrase of the first called tool file with one for the language.

    A tool file with phrases, but none in this language, gets the
    translated generic one, so that it is never silent in some languages.
    """
    if (registry := hass.data.get(DATA_TOOLS)) is None or not chat_log.llm_api:
        return None
    offered = {tool.name: tool for tool in chat_log.llm_api.tools}
    files = [
        name
        for name in (tool_file_name(offered[t]) for t in tool_names if t in offered)
        if name
    ]
    if phrase := registry.pick_announcement(files, language):
        return phrase
    if any((spec := registry.get(name)) and spec.announce for name in files):
        return await async_spoken_text(hass, "announcement", language)
    return None
