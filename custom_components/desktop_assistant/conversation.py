"""Conversation agents of desktop_assistant, one per conversation subentry."""

from functools import partial
from typing import Literal

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, MATCH_ALL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import DesktopAssistantConfigEntry
from .const import DATA_TOOLS, DOMAIN
from .entity import DesktopAssistantEntity, Turn
from .llm import filter_invalid_llm_apis, tool_file_name
from .spoken import async_spoken_text

# Questions are answered concurrently; llama-server queues them in its slots.
PARALLEL_UPDATES = 0


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
        """Answer one question."""
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

        turn = Turn(
            language=user_input.language,
            announce=partial(self._async_pick_announcement, chat_log),
        )
        await self.async_run_tool_loop(chat_log, turn)
        result = conversation.async_get_result_from_chat_log(user_input, chat_log)
        if turn.fault:
            result.response.async_set_error(
                intent.IntentResponseErrorCode.UNKNOWN,
                result.response.speech["plain"]["speech"],
            )
        return result

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
