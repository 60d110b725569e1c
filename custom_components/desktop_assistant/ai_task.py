"""AI Task entities: `ai_task.generate_data` on the household's own llama-server."""

from typing import override

from homeassistant.components import ai_task, conversation
from homeassistant.exceptions import HomeAssistantError

from .agent.messages import build_messages
from .const import (
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    DEFAULT_AI_TASK_OPTIONS,
    DOMAIN,
    SUBENTRY_AI_TASK,
)
from .entity import DesktopAssistantEntity, subentry_platform_setup
from .server.failover import async_route
from .server.generate import GenerationError, Generator

# Generation runs on the server; HA need not hold tasks back.
PARALLEL_UPDATES = 0


class DesktopAssistantTaskEntity(ai_task.AITaskEntity, DesktopAssistantEntity):
    """Generates text, or data of a given structure, with a llama-server model."""

    _attr_supported_features = ai_task.AITaskEntityFeature.GENERATE_DATA

    @property
    @override
    def options(self) -> dict:
        """The task's options, defaults filled in."""
        return DEFAULT_AI_TASK_OPTIONS | dict(self.subentry.data)

    @override
    async def _async_generate_data(
        self, task: ai_task.GenDataTask, chat_log: conversation.ChatLog
    ) -> ai_task.GenDataTaskResult:
        """Answer the task's instructions, as JSON of its structure when it has one."""
        options = self.options
        # No failover inside a generation: its first server that is not
        # known to be down answers it.
        server = async_route(self.hass, self.entry, options).servers[0]
        generator = Generator(
            server.client,
            server.model,
            attempt_timeout=float(options[CONF_REQUEST_TIMEOUT]),
        )
        try:
            generation = await generator.async_generate(
                build_messages(chat_log.content, 0),
                structure=task.structure,
                name=task.name,
                max_tokens=int(options[CONF_MAX_TOKENS]),
                temperature=float(options[CONF_TEMPERATURE]),
            )
        except GenerationError as err:
            # One translated sentence per kind: unavailable, refused,
            # invalid_output, timeout, cancelled.
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key=f"generation_{err.kind}",
                translation_placeholders={"task": task.name, "error": str(err)},
            ) from err
        data = generation.data
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(
                agent_id=self.entity_id,
                content=data if isinstance(data, str) else str(data),
            )
        )
        return ai_task.GenDataTaskResult(
            conversation_id=chat_log.conversation_id, data=data
        )


# An AI Task entity for each AI task subentry.
async_setup_entry = subentry_platform_setup(
    SUBENTRY_AI_TASK, DesktopAssistantTaskEntity
)
