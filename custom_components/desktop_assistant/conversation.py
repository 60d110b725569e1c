"""Conversation agents of desktop_assistant, one per conversation subentry."""

import asyncio
from functools import partial
from typing import Literal

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import DesktopAssistantConfigEntry
from .const import CONF_RECORD, DATA_TOOLS, DOMAIN
from .entity import DesktopAssistantEntity, Turn
from .generate import async_get_activity
from .llm import tool_file_name
from .record import DATA_RECORD, TurnRecording


async def async_setup_entry(
    hass: HomeAssistant,
    entry: DesktopAssistantConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add an agent for each conversation subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == "conversation":
            async_add_entities(
                [DesktopAssistantConversationEntity(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


class DesktopAssistantConversationEntity(
    conversation.ConversationEntity,
    conversation.AbstractConversationAgent,
    DesktopAssistantEntity,
):
    """A conversation agent running a tool loop on llama-server."""

    _attr_supports_streaming = True

    def __init__(
        self, entry: DesktopAssistantConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Offer device control when the agent has LLM APIs."""
        super().__init__(entry, subentry)
        if self.options.get(CONF_LLM_HASS_API):
            self._attr_supported_features = (
                conversation.ConversationEntityFeature.CONTROL
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
        turn = Turn(
            language=user_input.language,
            announce=partial(self._pick_announcement, chat_log),
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
                recording.async_end(turn.fault)

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
        try:
            await chat_log.async_provide_llm_data(
                user_input.as_llm_context(DOMAIN),
                options.get(CONF_LLM_HASS_API) or None,
                options.get(CONF_PROMPT),
                user_input.extra_system_prompt,
            )
        except conversation.ConverseError as err:
            return err.as_conversation_result()

        # Background generation (the nightly pass) steps aside meanwhile.
        with async_get_activity(self.hass).turn():
            await self.async_run_tool_loop(chat_log, turn)
        result = conversation.async_get_result_from_chat_log(user_input, chat_log)
        if turn.fault:
            result.response.async_set_error(
                intent.IntentResponseErrorCode.UNKNOWN,
                result.response.speech["plain"]["speech"],
            )
        return result

    def _pick_announcement(
        self,
        chat_log: conversation.ChatLog,
        tool_names: list[str],
        language: str | None,
    ) -> str | None:
        """Return a phrase of the first called tool file with one for the language."""
        if (registry := self.hass.data.get(DATA_TOOLS)) is None or not chat_log.llm_api:
            return None
        offered = {tool.name: tool for tool in chat_log.llm_api.tools}
        files = [
            tool_file_name(offered[name]) for name in tool_names if name in offered
        ]
        return registry.pick_announcement([name for name in files if name], language)
