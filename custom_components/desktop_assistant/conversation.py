"""Conversation agents of desktop_assistant, one per conversation subentry."""

import asyncio
from collections.abc import AsyncGenerator
from functools import partial
from typing import Literal

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, MATCH_ALL
from homeassistant.helpers import intent, llm

from .agent.confirmation import HeldCall, Reply, asker_of, phrases_for
from .agent.language import LanguageDetector
from .agent.loop import ToolLoop
from .agent.spoken import async_spoken_text
from .agent.turn_state import Turn
from .const import CONF_CONFIRM_TIMEOUT, CONF_LANGUAGES, CONF_RECORD, DOMAIN
from .entity import DesktopAssistantEntity, subentry_platform_setup
from .llm import filter_invalid_llm_apis, tool_file_name
from .record import TurnRecording
from .runtime import (
    DATA_CONFIRMATIONS,
    DATA_RECORD,
    DATA_TOOLS,
    DesktopAssistantConfigEntry,
)
from .server.activity import async_get_activity
from .server.client import ServerUnavailable
from .server.failover import async_route
from .server.no_server import NoServerWatch

# Questions are answered concurrently; llama-server queues them in its slots.
PARALLEL_UPDATES = 0


class DesktopAssistantConversationEntity(
    conversation.ConversationEntity,
    conversation.AbstractConversationAgent,
    DesktopAssistantEntity,
):
    """A conversation agent running a tool loop on llama-server."""

    _attr_supports_streaming = True
    # Set when the household speaks more than the pipeline's language.
    _language_detector: LanguageDetector | None = None

    def __init__(
        self, entry: DesktopAssistantConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Offer device control when the agent has LLM APIs."""
        super().__init__(entry, subentry)
        if self.options.get(CONF_LLM_HASS_API):
            self._attr_supported_features = (
                conversation.ConversationEntityFeature.CONTROL
            )

    async def async_added_to_hass(self) -> None:
        """Load the language detector (a second's work) when languages are set."""
        await super().async_added_to_hass()
        self.async_on_remove(
            NoServerWatch(self.hass, self.entry, self.subentry).async_start()
        )
        if languages := self.options.get(CONF_LANGUAGES):
            self._language_detector = await self.hass.async_add_executor_job(
                LanguageDetector, languages
            )

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """The model decides which languages it speaks."""
        return MATCH_ALL

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Answer one question; the conversation record keeps the turn."""
        language = user_input.language
        if self._language_detector is not None:
            language = self._language_detector.detect(user_input.text, language)
        turn = Turn(
            language=language,
            announce=partial(self._async_pick_announcement, chat_log),
        )
        recording = self._async_begin_recording(user_input, chat_log)
        try:
            return await self._async_answer(user_input, chat_log, turn)
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
                )

    def _async_begin_recording(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> TurnRecording | None:
        """Start recording the turn, unless the agent keeps no record."""
        if not self.options[CONF_RECORD] or DATA_RECORD not in self.hass.data:
            return None
        return self.hass.data[DATA_RECORD].async_begin_turn(
            agent_id=self.entity_id,
            config_entry_id=self.entry.entry_id,
            user_input=user_input,
            chat_log=chat_log,
        )

    async def _async_answer(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
        turn: Turn,
    ) -> conversation.ConversationResult:
        """Run the tool loop on the question; faults become the answer."""
        options = self.options
        # An API that went away (an MCP server removed) is left out, not fatal.
        llm_apis = filter_invalid_llm_apis(
            self.hass, options.get(CONF_LLM_HASS_API) or []
        )
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                llm_apis or None,
                options.get(CONF_PROMPT),
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()

        # Background generation (the nightly pass) steps aside meanwhile.
        with async_get_activity(self.hass).turn():
            await self._async_reply(user_input, chat_log, turn)
        return self._async_result(user_input, chat_log, turn)

    def _async_result(
        self,
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
                    agent_id=self.entity_id, content=turn.fault_sentence
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
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
        turn: Turn,
    ) -> None:
        """Answer the question, or the agent's own question about held calls.

        On a yes the held calls run as they were asked about, and the model
        says how they went; on a no nothing runs; anything else is a new
        question. A turn whose tool calls were held ends with the question.
        """
        confirmations = self.hass.data[DATA_CONFIRMATIONS]
        asker = asker_of(user_input.context, user_input.device_id)
        reply, confirmed = confirmations.answer(chat_log, asker)
        if reply is Reply.NO:
            await _async_say(
                self.entity_id, chat_log, phrases_for(turn.language).cancelled
            )
            return
        if confirmed:
            await _async_run_confirmed(self.entity_id, chat_log, confirmed)
            # Whatever was not run now (a tool reloaded away) is not run later.
            confirmations.cancel(chat_log.conversation_id)
        turn.route = async_route(
            self.hass, self.entry, self.options, chat_log.conversation_id
        )
        waited = await self._async_wait_for_asleep(chat_log, turn)
        loop = ToolLoop(self.hass, self.entity_id, self.options)
        await loop.async_run_tool_loop(chat_log, turn)
        if (
            not waited
            and turn.fault == ServerUnavailable.kind
            and turn.route.answered is None
            and await self._async_wait_for_asleep(chat_log, turn)
        ):
            # The question found its server just gone to sleep: asked again
            # once it is woken, or the fault is said as before.
            turn.fault = turn.fault_sentence = None
            await loop.async_run_tool_loop(chat_log, turn)
        timeout = float(self.options[CONF_CONFIRM_TIMEOUT])
        if question := confirmations.ask(chat_log, turn.language, timeout):
            await _async_say(self.entity_id, chat_log, question)

    async def _async_wait_for_asleep(
        self, chat_log: conversation.ChatLog, turn: Turn
    ) -> bool:
        """Wake the agent's own server and wait for it when it should; True if so."""
        assert turn.route is not None
        if (asleep := turn.route.server_to_wake()) is None:
            return False
        # Said before the wait, so the person knows why nothing comes yet.
        await _async_say(
            self.entity_id,
            chat_log,
            await async_spoken_text(self.hass, "waking", turn.language),
        )
        await turn.route.async_wait_for(asleep)
        return True

    async def _async_pick_announcement(
        self,
        chat_log: conversation.ChatLog,
        tool_names: list[str],
        language: str | None,
    ) -> str | None:
        """Return a phrase of the first called tool file with one for the language.

        A tool file with phrases, but none in this language, gets the
        translated generic one, so that it is never silent in some languages.
        """
        if (registry := self.hass.data.get(DATA_TOOLS)) is None or not chat_log.llm_api:
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
            return await async_spoken_text(self.hass, "announcement", language)
        return None


async def _async_say(agent_id: str, chat_log: conversation.ChatLog, text: str) -> None:
    """Add the agent's own words to the chat log, streamed like the model's."""

    async def deltas() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant"}
        yield {"content": text}

    async for _content in chat_log.async_add_delta_content_stream(agent_id, deltas()):
        pass


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
        if (name := tool_file_name(tool)) is not None:
            offered.setdefault(name, tool.name)
    tool_inputs = [
        llm.ToolInput(offered[call.spec.name], call.arguments)
        for call in calls
        if call.spec.name in offered
    ]
    if not tool_inputs:
        return

    async def deltas() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant"}
        yield {"tool_calls": tool_inputs}

    async for _content in chat_log.async_add_delta_content_stream(agent_id, deltas()):
        pass


# An agent for each conversation subentry.
async_setup_entry = subentry_platform_setup(
    "conversation", DesktopAssistantConversationEntity
)
