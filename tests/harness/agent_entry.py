"""The agent as tests and benchmarks use it: its entry, tools to offer it, asking it."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from homeassistant.components import ai_task, conversation
from homeassistant.const import CONF_MODEL, CONF_URL
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, llm
from homeassistant.helpers.chat_session import ChatSession
import probatio as vol
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.chat_session import async_get_chat_session
from custom_components.desktop_assistant.const import (
    CONF_TEMPERATURE,
    DEFAULT_AI_TASK_OPTIONS,
    DOMAIN,
    SUBENTRY_AI_TASK,
)
from tests.harness.llama_server import MODEL_ID

# The id of the LLM API that `register_tools` offers.
TOOLS_API_ID = "benchmark_tools"


async def async_add_agent(
    hass: HomeAssistant,
    url: str,
    options: dict[str, Any],
    *,
    title: str | None = None,
    data: dict[str, Any] | None = None,
    entry_options: dict[str, Any] | None = None,
    agent_title: str = MODEL_ID,
) -> tuple[MockConfigEntry, str]:
    """Set up an entry for the server at `url`; return it and its agent's entity id.

    `data` is added to the entry's data (an API key), `entry_options` are
    the entry's own options; `title` names the entry, `agent_title` its agent.
    """
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_URL: url} | (data or {}),
        options=entry_options or {},
        subentries_data=[
            {
                "subentry_type": "conversation",
                "title": agent_title,
                "data": options,
                "unique_id": None,
            }
        ],
        **({"title": title} if title is not None else {}),
    )
    return entry, await async_set_up_agent_entry(hass, entry)


async def async_add_task_entity(hass: HomeAssistant, url: str, model: str) -> str:
    """Set up an entry for the server at `url` with one AI task; its entity id.

    Temperature 0: the same question is answered alike each time.
    """
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_URL: url},
        subentries_data=[
            {
                "subentry_type": SUBENTRY_AI_TASK,
                "title": "Tasks",
                "data": DEFAULT_AI_TASK_OPTIONS
                | {CONF_MODEL: model, CONF_TEMPERATURE: 0.0},
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    (subentry_id,) = entry.subentries
    entity_id = er.async_get(hass).async_get_entity_id("ai_task", DOMAIN, subentry_id)
    assert entity_id is not None
    return entity_id


async def async_evaluate(
    hass: HomeAssistant,
    entity_id: str,
    questions: dict[str, Any],
    task_name: str = "front door",
    **inputs: Any,
) -> Any:
    """`ai_task.async_evaluate` of the entity (HA 2026.11 on); its result.

    `inputs` are the task's `state` and `attachments`.
    """
    return await ai_task.async_evaluate(
        hass,
        task_name=task_name,
        entity_id=entity_id,
        questions=questions,
        **inputs,
    )


async def async_set_up_agent_entry(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Add and set up an entry of one conversation agent; return its entity id."""
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    (subentry_id,) = entry.subentries
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", entry.domain, subentry_id
    )
    assert entity_id is not None
    return entity_id


class RecordingTool(llm.Tool):
    """A tool of the test API that records its calls and answers a fixed text.

    It changes nothing, and says so, as Home Assistant's reading tools do.
    """

    integration = "test"
    annotations = llm.ToolAnnotations(read_only=True, open_world=False)

    def __init__(self, name: str, parameters: dict[str, Any], answer: str) -> None:
        self.name = name
        self.description = f"The {name} tool"
        self.parameters = vol.Schema(parameters)
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> llm.ToolResult:
        self.calls.append(tool_input.tool_args)
        return llm.ToolResult(data={"result": self.answer})


@dataclass
class ToolsAPI(llm.API):
    """An LLM API, as an integration would register, offering recording tools."""

    tools: list[RecordingTool] = field(default_factory=list)

    async def async_get_api_instance(
        self, llm_context: llm.LLMContext
    ) -> llm.APIInstance:
        return llm.APIInstance(
            api=self,
            api_prompt="Use the tools.",
            llm_context=llm_context,
            tools=self.tools,
        )


def register_tools(hass: HomeAssistant, answers: dict[str, str]) -> str:
    """Offer a tool per name that takes nothing and answers its text; return the API id.

    The id is what an agent's CONF_LLM_HASS_API names to be offered the tools.
    """
    tools = [RecordingTool(name, {}, answer) for name, answer in answers.items()]
    llm.async_register_api(
        hass, ToolsAPI(hass=hass, id=TOOLS_API_ID, name="Tools", tools=tools)
    )
    return TOOLS_API_ID


@contextmanager
def asked(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None = None,
    listener: Callable[[conversation.ChatLog, dict[str, Any]], None] | None = None,
    language: str = "en",
    device_id: str | None = None,
) -> Iterator[tuple[ChatSession, conversation.ChatLog, Context]]:
    """The session and chat log a question is asked in, as the Assist pipeline opens them."""
    context = Context()
    user_input = conversation.ConversationInput(
        text=text,
        context=context,
        conversation_id=conversation_id,
        device_id=device_id,
        satellite_id=None,
        language=language,
        agent_id=agent_id,
    )
    with (
        async_get_chat_session(hass, conversation_id, context) as session,
        conversation.async_get_chat_log(
            hass, session, user_input, chat_log_delta_listener=listener
        ) as chat_log,
    ):
        yield session, chat_log, context


async def async_ask(
    hass: HomeAssistant,
    agent_id: str,
    text: str,
    conversation_id: str | None = None,
    listener: Callable[[conversation.ChatLog, dict[str, Any]], None] | None = None,
    language: str = "en",
) -> conversation.ConversationResult:
    """Ask as the Assist pipeline does, in `language`; `listener` sees each delta."""
    with asked(hass, agent_id, text, conversation_id, listener, language) as (
        session,
        _chat_log,
        context,
    ):
        return await conversation.async_converse(
            hass, text, session.conversation_id, context, language, agent_id
        )


async def merged_tool_name(hass: HomeAssistant, api_ids: list[str], name: str) -> str:
    """The name Home Assistant gives the tool whose name ends in `name` among the APIs'.

    2026.10 prefixes each tool of several APIs with its API's name, 2026.11
    only the names that two APIs offer.
    """
    context = llm.LLMContext(
        platform="test",
        context=Context(),
        language="en",
        assistant=conversation.DOMAIN,
        device_id=None,
    )
    api = await llm.async_get_api(hass, api_ids, context)
    (merged,) = [tool.name for tool in api.tools if tool.name.endswith(name)]
    return merged
