"""The loaded tools, as the agent, intents, services and the command line use them."""

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
import json
import random
import time
from typing import Any

from ..clock import monotonic_seconds
from .arguments import ArgumentError, parse_arguments
from .redaction import Redactor
from .runner import run_tool
from .spec import Problem, ToolFolder, ToolSpec

# Tool processes running at once; more wait for a slot, within their timeout.
MAX_RUNNING = 8


@dataclass(frozen=True, slots=True)
class ToolRun:
    """One finished run of a tool, secrets already redacted."""

    name: str
    started_at: float
    duration: float
    arguments: str
    result: str

    @property
    def failed(self) -> bool:
        """Whether the tool answered an error (its own or the runner's)."""
        return self.result.startswith("error:")


class ToolRegistry:
    """The tools of one config folder. A reload swaps the folder, not the registry.

    One registry serves a whole Home Assistant, so its limit on running tools
    holds for every agent, intent and action together.
    """

    def __init__(
        self,
        folder: ToolFolder,
        base_env: Callable[[], Mapping[str, str]] = dict,
    ) -> None:
        """Serve `folder`'s tools; `base_env` gives variables beneath its [env].

        Home Assistant gives its time zone as TZ, so that `date` and the
        example tools read times as the household does.
        """
        self._folder = folder
        self._base_env = base_env
        self._slots = asyncio.Semaphore(MAX_RUNNING)
        self._secrets: list[str] = []
        self._redactor = Redactor(folder.secrets)
        self._run_listeners: list[Callable[[ToolRun], None]] = []

    @property
    def folder(self) -> ToolFolder:
        """The folder the tools were read from."""
        return self._folder

    def replace(self, folder: ToolFolder) -> None:
        """Use the tools of a newly read folder from now on."""
        self._folder = folder
        self._update_redactor()

    def add_secret(self, secret: str) -> Callable[[], None]:
        """Keep a value (an API key) out of every result; return its removal."""
        self._secrets.append(secret)
        self._update_redactor()

        def remove() -> None:
            self._secrets.remove(secret)
            self._update_redactor()

        return remove

    def add_run_listener(
        self, listener: Callable[[ToolRun], None]
    ) -> Callable[[], None]:
        """Call `listener` after every run; return its removal."""
        self._run_listeners.append(listener)
        return lambda: self._run_listeners.remove(listener)

    def _update_redactor(self) -> None:
        self._redactor = Redactor([*self._folder.secrets, *self._secrets])

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
        """Run a tool with JSON (or decoded) arguments; return text or `error: ...`.

        No [env] value or API key is in the text: each becomes `***`.
        """
        redactor = self._redactor
        started_at, started = time.time(), monotonic_seconds()
        result = redactor.redact(await self._run(name, arguments, redactor))
        if self._run_listeners and name in self._folder.tools:
            shown = (
                arguments
                if isinstance(arguments, str)
                else json.dumps(arguments, default=str)
            )
            run = ToolRun(
                name,
                started_at,
                monotonic_seconds() - started,
                redactor.redact(shown),
                result,
            )
            for listener in self._run_listeners:
                listener(run)
        return result

    async def _run(
        self, name: str, arguments: str | Mapping[str, Any] | None, redactor: Redactor
    ) -> str:
        spec = self.get(name)
        if spec is None:
            known = ", ".join(sorted(self._folder.tools)) or "none"
            return f"error: unknown tool {name!r} (tools: {known})"
        try:
            values = parse_arguments(spec, arguments)
        except ArgumentError as err:
            return f"error: {err}"
        return await run_tool(
            spec,
            values,
            tools_dir=self._folder.tools_dir,
            env={**self._base_env(), **self._folder.env},
            slots=self._slots,
            redactor=redactor,
        )
