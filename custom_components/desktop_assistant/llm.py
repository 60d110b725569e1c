"""The tool files as LLM tools, named desktop_assistant__<name>.

They are in the Assist API, so every LLM agent with Assist can call them, and
form an API of their own for agents that should not control the home.
"""

from collections.abc import Mapping
from typing import Any, override

from homeassistant.components.llm import LLMTools
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.llm import (
    API,
    LLM_API_ASSIST,
    APIInstance,
    LLMContext,
    NamespacedTool,
    Tool,
    ToolAnnotations,
    ToolInput,
    ToolResult,
    async_get_apis,
)
import probatio

from .const import DOMAIN
from .memory.llm_tools import memory_tools
from .reader import asker
from .record import RecallConversationsTool
from .runtime import DATA_CONFIRMATIONS, DATA_MEMORY, DATA_RECORD, DATA_TOOLS
from .tools import ArgumentError, ToolRegistry, ToolSpec, parse_arguments


def parameters_schema(spec: ToolSpec) -> probatio.Schema:
    """Return a tool file's parameters as the schema the model gets, all optional.

    An agent sends it to its model as JSON schema (`probatio.to_openapi`):
    each parameter with its type from `tools.spec.PARAM_TYPES` and its
    description.
    """
    return probatio.Schema(
        {
            probatio.Optional(param.name, description=param.description): (
                param.python_type
            )
            for param in spec.params.values()
        }
    )


def described(spec: ToolSpec) -> str:
    """The tool's description for the model, with its first example question.

    An example shows a small model which questions the tool is for.
    """
    if not spec.examples:
        return spec.description
    return f'{spec.description} Example: "{spec.examples[0]}"'


def annotations_of(spec: ToolSpec) -> ToolAnnotations:
    """Say what a tool file does; what it reads or changes may be outside HA."""
    if spec.changes:
        return ToolAnnotations(
            read_only=False,
            destructive=spec.destructive,
            idempotent=False,
            open_world=True,
        )
    return ToolAnnotations(
        read_only=True, destructive=False, idempotent=True, open_world=True
    )


class ConfigFolderTool(Tool):
    """A tool file: its description and params are the function the model sees."""

    integration = DOMAIN

    def __init__(self, spec: ToolSpec, registry: ToolRegistry) -> None:
        self.name = f"{DOMAIN}__{spec.name}"
        self.description = described(spec)
        self.annotations = annotations_of(spec)
        self.parameters = parameters_schema(spec)
        self.tool_name = spec.name
        self._registry = registry

    @override
    async def async_call(
        self, hass: HomeAssistant, tool_input: ToolInput, llm_context: LLMContext
    ) -> ToolResult:
        """Run the tool; `error: ...` text is returned as an error result.

        A tool that changes things first needs a person's yes (see
        agent/confirmation/); until then its answer asks for one.
        """
        arguments: Mapping[str, Any] = tool_input.tool_args
        if (spec := self._registry.get(self.tool_name)) is not None and spec.changes:
            try:
                values = parse_arguments(spec, arguments)
            except ArgumentError as err:
                return ToolResult(data={"result": f"error: {err}"}, error=True)
            if answer := hass.data[DATA_CONFIRMATIONS].gate(
                spec, tool_input.tool_args, values, llm_context
            ):
                return ToolResult(
                    data={"result": answer}, error=answer.startswith("error:")
                )
            arguments = values
        text = await self._registry.async_run(self.tool_name, arguments)
        return ToolResult(data={"result": text}, error=text.startswith("error:"))


def integration_tools(hass: HomeAssistant, user_id: str | None) -> list[Tool]:
    """A tool per loaded tool file, recall_conversations, and memory's tools.

    Memory's tools are those of a turn of `user_id` (None: no user).
    """
    tools: list[Tool] = []
    if (registry := hass.data.get(DATA_TOOLS)) is not None:
        tools += [ConfigFolderTool(spec, registry) for spec in registry.tools]
    if (record := hass.data.get(DATA_RECORD)) is not None and record.available:
        tools.append(RecallConversationsTool())
    if DATA_MEMORY in hass.data:
        tools += memory_tools(user_id)
    return tools


@callback
def async_get_tools(
    hass: HomeAssistant, llm_context: LLMContext, api_id: str
) -> LLMTools | None:
    """Return the integration's tools, and memory's context, in the Assist API only."""
    if api_id != LLM_API_ASSIST or not (
        tools := integration_tools(hass, asker(llm_context))
    ):
        return None
    memory = hass.data.get(DATA_MEMORY)
    return LLMTools(
        tools=tools, prompt=memory.context_for(asker(llm_context)) if memory else None
    )


class ToolFilesAPI(API):
    """The config folder's tools alone, without Assist's control of the home."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Name the API after the integration."""
        super().__init__(hass=hass, id=DOMAIN, name="Desktop Assistant tools")

    @override
    async def async_get_api_instance(self, llm_context: LLMContext) -> APIInstance:
        """Offer the integration's tools, and memory's context as the prompt."""
        memory = self.hass.data.get(DATA_MEMORY)
        return APIInstance(
            api=self,
            api_prompt=memory.context_for(asker(llm_context)) if memory else "",
            llm_context=llm_context,
            tools=integration_tools(self.hass, asker(llm_context)),
        )


def tool_file_name(tool: Tool) -> str | None:
    """Return the tool file behind an LLM tool, however many APIs wrap it."""
    while isinstance(tool, NamespacedTool):
        tool = tool.tool
    return tool.tool_name if isinstance(tool, ConfigFolderTool) else None


def tool_examples(
    tools: list[Tool], registry: ToolRegistry | None
) -> dict[str, tuple[str, ...]]:
    """What points a question to each offered tool file, by the tool's name.

    Its example questions and its words (`agent/narrowing.py`).
    """
    examples: dict[str, tuple[str, ...]] = {}
    for tool in tools:
        name = tool_file_name(tool)
        if name and registry and (spec := registry.get(name)) is not None:
            examples[tool.name] = spec.examples + spec.words
    return examples


@callback
def filter_invalid_llm_apis(hass: HomeAssistant, selected_apis: list[str]) -> list[str]:
    """Return the selected LLM API ids that Home Assistant still has."""
    valid_llm_apis = {api.id for api in async_get_apis(hass)}
    return [api for api in selected_apis if api in valid_llm_apis]
