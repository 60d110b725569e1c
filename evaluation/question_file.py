"""Question files of scripts/eval-tools (`--questions FILE`), such as the held-out set.

A TOML file of `[[question]]` tables: `text`, `language`, `tools` (the
tools a good model calls, in order; alternatives split by "|"; empty for a
plain question), `after` (the question asked before it in the same
conversation) and `arguments` (what the first call's arguments hold: ""
for empty, else alternatives split by "|", any case).
"""

from dataclasses import dataclass, field
from pathlib import Path
import tomllib
from typing import Any

QUESTIONS = Path(__file__).resolve().parent / "questions"
# What the narrowing's words were decided on: held-out sets after their
# one run (see the file's head).
DEVELOPMENT = QUESTIONS / "development.toml"
# Written by someone who saw neither the tools' examples nor the narrowing's
# words; run once, as it comes.
HELD_OUT = QUESTIONS / "held_out.toml"


@dataclass(frozen=True)
class Question:
    """A question of a file and what a good model does with it."""

    text: str
    language: str
    # Each call a good model makes, in order: the tools that are right for it.
    tools: tuple[frozenset[str], ...]
    after: str | None = None
    arguments: dict[str, str] = field(default_factory=dict)

    @property
    def needs_tool(self) -> bool:
        """Whether a good model calls a tool for it."""
        return bool(self.tools)

    def right_tool(self, name: str) -> bool:
        """Whether a tool (its name, any API prefix left off) is one a good model calls."""
        return any(name in tools for tools in self.tools)

    def argument_right(self, name: str, value: Any) -> bool:
        """Whether the first call's argument holds what the file says."""
        wanted = self.arguments[name]
        if wanted == "":
            return value in (None, "")
        return isinstance(value, str) and any(
            choice in value.lower() for choice in wanted.lower().split("|")
        )


def read_questions(path: Path) -> list[Question]:
    """The questions of a file; a file that is not one raises ValueError."""
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8"))["question"]
        return [
            Question(
                text=table["text"],
                language=table["language"],
                tools=tuple(frozenset(tool.split("|")) for tool in table["tools"]),
                after=table.get("after"),
                arguments=dict(table.get("arguments", {})),
            )
            for table in tables
        ]
    except (
        OSError,
        tomllib.TOMLDecodeError,
        KeyError,
        TypeError,
        AttributeError,
    ) as err:
        raise ValueError(f"{path}: not a question file ({err!r})") from err
