"""The memory tools the model calls: remember and recall."""

from typing import Any, Final, override

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
from ..reader import asker
from ..runtime import DATA_MEMORY
from .memory import Memory
from .pages import PAGE_KINDS

# Whose a remembered fact is: the person asking's, or the household's.
FOR_ME: Final = "me"
FOR_HOUSEHOLD: Final = "household"


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
        """The memory's answer to the turn's user; a refusal answers `error: ...`.

        A turn with no user (a voice) is the household's.
        """
        text = await self._async_answer(
            hass.data[DATA_MEMORY], tool_input.tool_args, asker(llm_context)
        )
        return ToolResult(data={"result": text}, error=text.startswith("error:"))

    async def _async_answer(
        self, memory: Memory, args: dict[str, Any], user_id: str | None
    ) -> str:
        """What the memory answers to the call's arguments for `user_id`."""
        raise NotImplementedError


class RememberTool(_MemoryTool):
    """Append a dated note to a page; never rewrites or deletes."""

    name = f"{DOMAIN}__remember"
    description = (
        "Remember a lasting fact: appends a dated note to the page it is about "
        "(a person, place, project or thing, created when new), or to the "
        "household's profile with page `profile`. Use it when asked to remember "
        "something or when told a fact that will still be true in a month. "
        "When the person asking is known, a fact goes on their own pages "
        "(`profile`: their own profile) unless `for` is `household`."
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
            vol.Optional(
                "for",
                description="`me` (the default): the person asking; `household`:"
                " a fact about the household",
            ): vol.In([FOR_ME, FOR_HOUSEHOLD]),
        }
    )
    annotations = _annotations(read_only=False)

    @override
    async def _async_answer(
        self, memory: Memory, args: dict[str, Any], user_id: str | None
    ) -> str:
        """Note the fact on the asker's pages, or the household's."""
        return await memory.async_remember(
            str(args.get("page") or ""),
            str(args.get("fact") or ""),
            kind=str(args.get("type") or "other"),
            user_id=None if args.get("for") == FOR_HOUSEHOLD else user_id,
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
    async def _async_answer(
        self, memory: Memory, args: dict[str, Any], user_id: str | None
    ) -> str:
        """Return the matching pages' text, of those the asker reads."""
        return await memory.async_recall(str(args.get("query") or ""), user_id)


class ForgetTool(_MemoryTool):
    """Remove a fact from the asking person's own page."""

    name = f"{DOMAIN}__forget"
    description = (
        "Forget a fact about the person asking, when they say so ('forget "
        "that', 'forget that I ...'): removes it from their own page (page "
        "`profile` for their profile). Only for a known person's own pages."
    )
    parameters = vol.Schema(
        {
            vol.Required("page", description="Their page's name, or `profile`"): str,
            vol.Required("fact", description="The words of the fact to forget"): str,
        }
    )
    annotations = ToolAnnotations(
        read_only=False, destructive=True, idempotent=True, open_world=False
    )

    @override
    async def _async_answer(
        self, memory: Memory, args: dict[str, Any], user_id: str | None
    ) -> str:
        """Forget the fact on the asker's own page."""
        return await memory.async_forget(
            str(args.get("page") or ""), str(args.get("fact") or ""), user_id
        )


def memory_tools(user_id: str | None) -> list[Tool]:
    """Return the memory tools for a turn of `user_id`: forget only for a known person.

    They hold nothing and find memory when called: HA's conversation trace
    deep-copies the offered tools.
    """
    tools: list[Tool] = [RememberTool(), RecallTool()]
    return tools if user_id is None else [*tools, ForgetTool()]
