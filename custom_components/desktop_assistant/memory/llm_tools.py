"""The memory tools the model calls: remember and recall."""

from typing import Any, override

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
from .memory import Memory
from .pages import PAGE_KINDS


def _annotations(*, read_only: bool) -> ToolAnnotations:
    """What a memory tool is: idempotent and closed-world, reading or writing."""
    return ToolAnnotations(
        read_only=read_only, destructive=False, idempotent=True, open_world=False
    )


class _MemoryTool(Tool):
    """A tool answered in text by the memory, found when the tool is called."""

    integration = DOMAIN

    @override
    async def async_call(
        self, hass: HomeAssistant, tool_input: ToolInput, llm_context: LLMContext
    ) -> ToolResult:
        """The memory's answer; a refusal answers `error: ...`."""
        text = await self._async_answer(hass.data[DATA_MEMORY], tool_input.tool_args)
        return ToolResult(data={"result": text}, error=text.startswith("error:"))

    async def _async_answer(self, memory: Memory, args: dict[str, Any]) -> str:
        """What the memory answers to the call's arguments."""
        raise NotImplementedError


class RememberTool(_MemoryTool):
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
    annotations = _annotations(read_only=False)

    @override
    async def _async_answer(self, memory: Memory, args: dict[str, Any]) -> str:
        """Note the fact."""
        return await memory.async_remember(
            str(args.get("page") or ""),
            str(args.get("fact") or ""),
            kind=str(args.get("type") or "other"),
        )


class RecallTool(_MemoryTool):
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
    annotations = _annotations(read_only=True)

    @override
    async def _async_answer(self, memory: Memory, args: dict[str, Any]) -> str:
        """Return the matching pages' text."""
        return await memory.async_recall(str(args.get("query") or ""))


def memory_tools() -> list[Tool]:
    """Return the memory tools.

    They hold nothing and find memory when called: HA's conversation trace
    deep-copies the offered tools.
    """
    return [RememberTool(), RecallTool()]
