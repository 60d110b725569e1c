"""The order scripts/eval-tools offers the tools in: a measurement, not an agent option.

The agent lists its tools sorted by name (`format_tools`), so the prompt's
cached prefix is the same bytes whatever order the APIs give them in. The
prompt's tool list, native mode's `tools` and constrained mode's tool
branches all follow that list; the answer branch comes first
(`reply_schema`). To measure whether the order moves a model's choice, the
eval swaps those two functions for the run, in its own process only: the
agent keeps one order and no option for it.
"""

from collections.abc import Iterator, Mapping
import contextlib
from typing import Any, Final
from unittest import mock

from homeassistant.helpers import llm

from custom_components.desktop_assistant.agent import loop
from custom_components.desktop_assistant.agent.messages import format_tools
from custom_components.desktop_assistant.server import constrained
from custom_components.desktop_assistant.server.constrained import reply_schema

NAME: Final = "name"
REVERSED: Final = "reversed"
TOOL_ORDERS: Final = (NAME, REVERSED)


def reversed_tools(api: llm.APIInstance) -> list[dict[str, Any]]:
    """The API's tools as the agent lists them, last name first."""
    return format_tools(api)[::-1]


def answer_last_schema(
    schemas: Mapping[str, dict[str, Any]], answer_length: int | None = None
) -> dict[str, Any]:
    """The agent's reply schema with the answer branch after the tools'."""
    answer_branch, *tool_branches = reply_schema(schemas, answer_length)["anyOf"]
    return {"anyOf": [*tool_branches, answer_branch]}


@contextlib.contextmanager
def offered_order(tool_order: str, *, answer_last: bool) -> Iterator[None]:
    """Offer the tools in `tool_order`, the answer branch last if asked, meanwhile."""
    with contextlib.ExitStack() as swaps:
        if tool_order == REVERSED:
            swaps.enter_context(mock.patch.object(loop, "format_tools", reversed_tools))
        if answer_last:
            swaps.enter_context(
                mock.patch.object(constrained, "reply_schema", answer_last_schema)
            )
        yield
