"""The model's tool calls checked before anything runs: known tool, JSON object, bounded depth."""

import json
import logging
from typing import Any

from homeassistant.helpers import llm
from homeassistant.util.ulid import ulid_now

from ..server.stream import ToolCallFragments
from ..text import valid_unicode_data

_LOGGER = logging.getLogger(__name__)


# How deeply a tool call's arguments may nest; tool parameters are flat, so
# anything deeper is a confused (or hostile) model.
MAX_ARGUMENT_DEPTH = 32


def nesting_depth(value: object) -> int:
    """Return how deeply lists and objects nest in a JSON value, without recursion."""
    depth = 0
    level = [value]
    while level:
        containers = [item for item in level if isinstance(item, dict | list)]
        if not containers:
            break
        depth += 1
        if depth > MAX_ARGUMENT_DEPTH:
            break
        level = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return depth


def decode_arguments(call: ToolCallFragments) -> tuple[object, str | None]:
    """Return the call's arguments as a JSON value, or why they cannot be read."""
    if call.decoded is not None:
        if call.arguments:
            return None, "arguments came both as JSON text and as a JSON value"
        return call.decoded, None
    try:
        # Half a surrogate pair (an escape in the text) becomes U+FFFD: the
        # tool, the record and the next request could not hold it.
        return valid_unicode_data(json.loads(call.arguments or "{}")), None
    except json.JSONDecodeError as err:
        return None, f"arguments are not valid JSON ({err.msg}): {call.arguments[:200]}"
    except RecursionError:
        return None, "arguments nest too deeply"
    except ValueError as err:
        # Python refuses integers of over 4300 digits.
        return None, f"arguments are not usable JSON ({err})"


def parse_tool_call(
    call: ToolCallFragments, offered: set[str]
) -> tuple[dict[str, Any], str | None]:
    """Return the call's arguments, or why the call cannot be run."""
    if call.name not in offered:
        return {}, f"unknown tool {call.name!r}; offered: {', '.join(sorted(offered))}"
    arguments, error = decode_arguments(call)
    if error is not None:
        return {}, error
    if not isinstance(arguments, dict):
        return {}, f"arguments must be a JSON object, got: {str(arguments)[:200]}"
    if nesting_depth(arguments) > MAX_ARGUMENT_DEPTH:
        return {}, "arguments nest too deeply"
    try:
        # The next request echoes the call, and JSON has no Infinity or NaN.
        json.dumps(arguments, allow_nan=False)
    except ValueError:
        return {}, "arguments hold a number JSON cannot carry (too large, or NaN)"
    return arguments, None


def tool_inputs_of(
    calls: list[ToolCallFragments], offered: set[str], used_ids: set[str]
) -> tuple[list[llm.ToolInput], list[tuple[llm.ToolInput, str]]]:
    """Return the round's calls for HA, and those it must not run, with why.

    A call that cannot run is marked external, so HA leaves it to the agent,
    which answers it with an error result for the model. A call without an
    id, or with one already used in the turn, gets a new one, so that each
    call has its own result message.
    """
    tool_inputs: list[llm.ToolInput] = []
    rejected: list[tuple[llm.ToolInput, str]] = []
    for call in calls:
        arguments, error = parse_tool_call(call, offered)
        call_id = call.id if call.id and call.id not in used_ids else ulid_now()
        used_ids.add(call_id)
        tool_input = llm.ToolInput(
            tool_name=call.name,
            tool_args=arguments,
            id=call_id,
            external=error is not None,
        )
        tool_inputs.append(tool_input)
        if error is not None:
            _LOGGER.debug("Not running tool call %.100r: %s", call.name, error)
            rejected.append((tool_input, error))
    return tool_inputs, rejected
