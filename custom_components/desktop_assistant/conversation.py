"""Conversation agents of desktop_assistant, one per conversation subentry.

An adapter, as HA core's ollama: the asker's own conversation
(`agent/ownership.py`), the LLM data, the record, then the turn
(`agent/answer.py`).
"""

from typing import Literal

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, MATCH_ALL

from .agent.answer import Agent, async_answer
from .agent.language import LanguageDetector
from .agent.ownership import async_process_owned
from .const import CONF_LANGUAGES, CONF_RECORD, DOMAIN
from .entity import DesktopAssistantEntity, subentry_platform_setup
from .llm import filter_invalid_llm_apis
from .record import TurnRecording
from .runtime import DATA_RECORD, DesktopAssistantConfigEntry
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

    async def async_process(
        self, user_input: conversation.ConversationInput
    ) -> conversation.ConversationResult:
        """Answer in a conversation of the asker's: another member's id starts anew."""
        return await async_process_owned(
            self.hass, user_input, self._async_handle_message
        )

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """Answer one question: its LLM data, its record, the turn, the result."""
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
        agent = Agent(
            self.hass, self.entry, self.entity_id, options, self._language_detector
        )
        recording = self._async_begin_recording(user_input, chat_log)
        return await async_answer(agent, user_input, chat_log, recording)

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


# An agent for each conversation subentry.
async_setup_entry = subentry_platform_setup(
    "conversation", DesktopAssistantConversationEntity
)
