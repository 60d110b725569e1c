"""The loaded tools, as the agent, intents, services and the command line use them."""

from collections.abc import Iterable, Mapping
import random
from typing import Any

from .arguments import ArgumentError, parse_arguments
from .runner import run_tool
from .spec import Problem, ToolFolder, ToolSpec


class ToolRegistry:
    """The tools of one config folder. A reload swaps the folder, not the registry."""

    def __init__(self, folder: ToolFolder) -> None:
        self._folder = folder

    @property
    def folder(self) -> ToolFolder:
        """The folder the tools were read from."""
        return self._folder

    def replace(self, folder: ToolFolder) -> None:
        """Use the tools of a newly read folder from now on."""
        self._folder = folder

    @property
    def tools(self) -> list[ToolSpec]:
        """Every working tool, by name."""
        return [self._folder.tools[name] for name in sorted(self._folder.tools)]

    @property
    def problems(self) -> tuple[Problem, ...]:
        """What was wrong in the folder when it was read."""
        return self._folder.problems

    def get(self, name: str) -> ToolSpec | None:
        """Return the tool called `name`, if it loaded."""
        return self._folder.tools.get(name)

    def announcements(self, name: str, language: str | None) -> tuple[str, ...]:
        """Return the tool's phrases for a language; none for an unknown tool."""
        spec = self.get(name)
        return spec.announcements(language) if spec else ()

    def pick_announcement(
        self, names: Iterable[str], language: str | None
    ) -> str | None:
        """Return a random phrase of the first called tool that has some, if any."""
        for name in names:
            if phrases := self.announcements(name, language):
                # Random, so the same question is not announced word for word.
                return random.choice(phrases)
        return None

    async def async_run(
        self, name: str, arguments: str | Mapping[str, Any] | None = None
    ) -> str:
        """Run a tool with JSON (or decoded) arguments; return text or `error: ...`."""
        spec = self.get(name)
        if spec is None:
            known = ", ".join(sorted(self._folder.tools)) or "none"
            return f"error: unknown tool {name!r} (tools: {known})"
        try:
            values = parse_arguments(spec, arguments)
        except ArgumentError as err:
            return f"error: {err}"
        return await run_tool(
            spec, values, tools_dir=self._folder.tools_dir, env=self._folder.env
        )
