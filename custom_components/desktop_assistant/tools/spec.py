"""What a config folder holds once parsed: tools, their parameters, problems."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
import re
from typing import Final

from ..text import for_language

# The one table of parameter types: the name a tool file and the model's JSON
# schema use -> the Python type of the value the model is asked to send.
PARAM_TYPES: Final[dict[str, type]] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
}
# Tool and parameter names: the file name of a tool, a key in its [params].
NAME = re.compile(r"[a-z0-9_]+")
# A `{name}` inside a command element. Any word in braces is one, so a
# misspelt parameter is caught when the file is read, not when the tool runs.
PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 86400.0  # a day: a tool that runs longer has hung


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a tool, offered to the model as a JSON schema property."""

    name: str
    # A key of PARAM_TYPES.
    type: str
    description: str

    @property
    def python_type(self) -> type:
        """The Python type of a value for this parameter (`float` for number)."""
        return PARAM_TYPES[self.type]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool file: what the model is told and what is run."""

    name: str
    description: str
    command: tuple[str, ...]
    timeout: float = DEFAULT_TIMEOUT
    params: dict[str, Param] = field(default_factory=dict)
    # Language tag (lower case, as written in the file) -> phrases.
    announce: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Questions the tool answers, as a person asks them.
    examples: tuple[str, ...] = ()
    # Words for what it is about ("umbrella", "Regen"): with the examples,
    # they point a question to the tool when replies are constrained.
    words: tuple[str, ...] = ()
    # The tool changes something (writes, sends): it runs only after a yes.
    changes: bool = False
    # What it changes cannot be undone (deletes, sends); implies `changes`.
    destructive: bool = False
    # Language tag -> the question asked before it runs, with {param}s.
    confirm: dict[str, str] = field(default_factory=dict)

    def announcements(self, language: str | None) -> tuple[str, ...]:
        """Return the phrases to say while the tool runs, for a conversation language.

        `en-US` finds `announce.en-us`, else `announce.en`; `en` also finds
        `announce.en-gb` when that is the only English entry.
        """
        return for_language(self.announce, language) or ()

    def question(self, language: str | None, values: Mapping[str, str]) -> str | None:
        """Return the confirm question for a language, `{param}`s filled in.

        The language is found as for announcements; None when the file has no
        question for it.
        """
        if (template := for_language(self.confirm, language)) is None:
            return None
        return PLACEHOLDER.sub(lambda match: values.get(match[1], ""), template)


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong in a config folder file, named by file and key."""

    file: str
    key: str | None
    message: str

    def __str__(self) -> str:
        """Return `file: key: message`, the form printed and shown in Repairs."""
        if self.key is None:
            return f"{self.file}: {self.message}"
        return f"{self.file}: {self.key}: {self.message}"


@dataclass(frozen=True, slots=True)
class ToolFolder:
    """A parsed config folder. Broken tool files are left out of `tools`."""

    root: Path
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()
    # Names of [env] entries whose values a tool's answer may show.
    shown: frozenset[str] = frozenset()

    @property
    def tools_dir(self) -> Path:
        """The folder of tool files, where a command's helper scripts live too."""
        return self.root / "tools"

    @property
    def secrets(self) -> list[str]:
        """The [env] values no answer may show: all but the `shown` ones."""
        return [value for name, value in self.env.items() if name not in self.shown]


def camel_case(name: str) -> str:
    """Return a tool name in CamelCase, as in its intent: web_search -> WebSearch."""
    return "".join(part.capitalize() for part in name.split("_"))
