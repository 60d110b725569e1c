"""The tool files as LLM tools, named desktop_assistant__<name>.

They are in the Assist API, so every LLM agent with Assist can call them, and
form an API of their own for agents that should not control the home.
"""

from typing import override

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

from .const import DATA_TOOLS, DOMAIN
from .tools import ToolRegistry, ToolSpec

PARAM_VALIDATORS = {"string": str, "integer": int, "number": float, "boolean": bool}
# Tool files only read in this phase; what they read may be outside HA.
READ_ONLY = ToolAnnotations(
    read_only=True, destructive=False, idempotent=True, open_world=True
)


class ConfigFolderTool(Tool):
    """A tool file: its description and params are the function the model sees."""

    annotations = READ_ONLY
    integration = DOMAIN

    def __init__(self, spec: ToolSpec, registry: ToolRegistry) -> None:
        self.name = f"{DOMAIN}__{spec.name}"
        self.description = spec.description
        self.parameters = probatio.Schema(
            {
                probatio.Optional(
                    param.name, description=param.description
                ): PARAM_VALIDATORS[param.type]
                for param in spec.params.values()
            }
        )
        self.tool_name = spec.name
        self._registry = registry

    @override
    async def async_call(
        self, hass: HomeAssistant, tool_input: ToolInput, llm_context: LLMContext
    ) -> ToolResult:
        """Run the tool; `error: ...` text is returned as an error result."""
        text = await self._registry.async_run(self.tool_name, tool_input.tool_args)
        return ToolResult(data={"result": text}, error=text.startswith("error:"))


@callback
def async_get_tools(
    hass: HomeAssistant, llm_context: LLMContext, api_id: str
) -> LLMTools | None:
    """Return a tool per loaded tool file, in the Assist API only."""
    if api_id != LLM_API_ASSIST or (registry := hass.data.get(DATA_TOOLS)) is None:
        return None
    if not (specs := registry.tools):
        return None
    return LLMTools(tools=[ConfigFolderTool(spec, registry) for spec in specs])


class ToolFilesAPI(API):
    """The config folder's tools alone, without Assist's control of the home."""

    def __init__(self, hass: HomeAssistant) -> None:
        """Name the API after the integration."""
        super().__init__(hass=hass, id=DOMAIN, name="Desktop Assistant tools")

    @override
    async def async_get_api_instance(self, llm_context: LLMContext) -> APIInstance:
        """Offer a tool per loaded tool file."""
        registry = self.hass.data[DATA_TOOLS]
        return APIInstance(
            api=self,
            api_prompt="",
            llm_context=llm_context,
            tools=[ConfigFolderTool(spec, registry) for spec in registry.tools],
        )


def tool_file_name(tool: Tool) -> str | None:
    """Return the tool file behind an LLM tool, however many APIs wrap it."""
    while isinstance(tool, NamespacedTool):
        tool = tool.tool
    return tool.tool_name if isinstance(tool, ConfigFolderTool) else None


@callback
def filter_invalid_llm_apis(hass: HomeAssistant, selected_apis: list[str]) -> list[str]:
    """Return the selected LLM API ids that Home Assistant still has."""
    valid_llm_apis = {api.id for api in async_get_apis(hass)}
    return [api for api in selected_apis if api in valid_llm_apis]
