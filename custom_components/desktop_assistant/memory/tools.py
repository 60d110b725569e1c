"""The memory tools the model calls: remember and recall."""

from typing import override

from homeassistant.core import HomeAssistant
from homeassistant.helpers.llm import (
    LLMContext,
    Tool,
    ToolAnnotations,
    ToolInput,
    ToolResult,
)
import probatio as vol

from ..const import DOMAIN
from ..runtime import DATA_MEMORY
from .pages import PAGE_KINDS


class RememberTool(Tool):
    """Append a dated note to a page; never rewrites or deletes."""

    name = f"{DOMAIN}__remember"
    description = (
        "Remember a lasting fact: appends a dated note to the page it is about "
        "(a person, place, project or thing, created when new), or to the "
        "household's profile with page `profile`. Use it when asked to remember "
        "something or when told a fact that will still be true in a month."
    )
    parameters = vol.Schema(
        {
            vol.Required(
                "page",
                description="The page's name (a person's first name, a place, ...) "
                "or `profile` for facts about the household itself",
            ): str,
            vol.Required("fact", description="The fact, as one short sentence"): str,
            vol.Optional("type", description="What a new page is about"): vol.In(
                list(PAGE_KINDS)
            ),
        }
    )
    annotations = ToolAnnotations(
        read_only=False, destructive=False, idempotent=True, open_world=False
    )
    integration = DOMAIN

    @override
    async def async_call(
        self, hass: HomeAssistant, tool_input: ToolInput, llm_context: LLMContext
    ) -> ToolResult:
        """Note the fact; a refusal answers `error: ...`."""
        args = tool_input.tool_args
        text = await hass.data[DATA_MEMORY].async_remember(
            str(args.get("page") or ""),
            str(args.get("fact") or ""),
            kind=str(args.get("type") or "other"),
        )
        return ToolResult(data={"result": text}, error=text.startswith("error:"))


class RecallTool(Tool):
    """Find pages by name, alias or words, and return their text."""

    name = f"{DOMAIN}__recall"
    description = (
        "Look up what has been noted: pages whose name or alias is the query, "
        "then pages whose names or text contain its words. Use it before "
        "answering about anyone or anything in the memory index, or that "
        "might have been noted before."
    )
    parameters = vol.Schema(
        {vol.Required("query", description="A name, or the words to look for"): str}
    )
    annotations = ToolAnnotations(
        read_only=True, destructive=False, idempotent=True, open_world=False
    )
    integration = DOMAIN

    @override
    async def async_call(
        self, hass: HomeAssistant, tool_input: ToolInput, llm_context: LLMContext
    ) -> ToolResult:
        """Return the matching pages' text."""
        text = await hass.data[DATA_MEMORY].async_recall(
            str(tool_input.tool_args.get("query") or "")
        )
        return ToolResult(data={"result": text}, error=text.startswith("error:"))


def memory_tools() -> list[Tool]:
    """Return the memory tools.

    They hold nothing and find memory when called: HA's conversation trace
    deep-copies the offered tools.
    """
    return [RememberTool(), RecallTool()]
