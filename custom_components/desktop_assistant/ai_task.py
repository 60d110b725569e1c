"""AI Task entities: `ai_task.generate_data` on the household's own llama-server."""

from typing import override

from homeassistant.components import ai_task, conversation
from homeassistant.exceptions import HomeAssistantError

from .agent.loop import ToolLoop
from .agent.turn_state import Turn
from .attachments import async_attachment_parts, keep_servers_that_see
from .const import DEFAULT_AI_TASK_OPTIONS, DOMAIN, SUBENTRY_AI_TASK
from .entity import DesktopAssistantEntity, subentry_platform_setup
from .evaluate import async_evaluate
from .server.failover import async_route
from .server.generate import Expected, GenerationError

# Generation runs on the server; HA need not hold tasks back.
PARALLEL_UPDATES = 0

# Evaluate came with Home Assistant 2026.11; before it the entity only generates.
EVALUATE = getattr(ai_task.AITaskEntityFeature, "EVALUATE", None)


class DesktopAssistantTaskEntity(ai_task.AITaskEntity, DesktopAssistantEntity):
    """Generates text, or data of a given structure, with a llama-server model."""

    _attr_supported_features = (
        ai_task.AITaskEntityFeature.GENERATE_DATA
        | ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS
    )
    if EVALUATE is not None:
        _attr_supported_features |= EVALUATE

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
        attached = await async_attachment_parts(self.hass, task.name, task.attachments)
        route = async_route(self.hass, self.entry, options)
        keep_servers_that_see(route, task.name, attached)
        turn = Turn(language=None, route=route)
        loop = ToolLoop(self.hass, self.entity_id, options, tuple(attached.parts))
        # What the task needs: a generated answer of its structure.
        expected = Expected(task.name, task.structure)
        try:
            await loop.async_generate_answer(chat_log, turn, expected)
            data = expected.parse(_answer_text(chat_log))
        except GenerationError as err:
            # One translated sentence per kind: unavailable, refused,
            # invalid_output, timeout, cancelled.
            raise HomeAssistantError(
                translation_domain=DOMAIN,
                translation_key=f"generation_{err.kind}",
                translation_placeholders={"task": task.name, "error": str(err)},
            ) from err
        return ai_task.GenDataTaskResult(
            conversation_id=chat_log.conversation_id, data=data
        )

    @override
    async def _async_evaluate(
        self, task: ai_task.EvaluationTask
    ) -> ai_task.EvaluationTaskResult:
        """Answer the task's questions from the model's token probabilities.

        Called only where HA has evaluate; the annotations are not evaluated.
        """
        return await async_evaluate(self.hass, self.entry, self.options, task)


def _answer_text(chat_log: conversation.ChatLog) -> str:
    """The text of the model's answer, the last content of the chat log."""
    last = chat_log.content[-1]
    if isinstance(last, conversation.AssistantContent):
        return last.content or ""
    return ""


# An AI Task entity for each AI task subentry.
async_setup_entry = subentry_platform_setup(
    SUBENTRY_AI_TASK, DesktopAssistantTaskEntity
)
