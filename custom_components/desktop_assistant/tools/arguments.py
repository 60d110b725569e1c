"""Turn a model's (or a person's) arguments into the strings put into argv."""

from collections.abc import Callable, Mapping
import json
import math
import re
from typing import Any

from .spec import Param, ToolSpec

INTEGER = re.compile(r"[+-]?\d+")


class ArgumentError(ValueError):
    """The arguments do not fit the tool; the message is meant for the model."""


def parse_arguments(
    spec: ToolSpec, arguments: str | Mapping[str, Any] | None
) -> dict[str, str]:
    """Return every parameter's string value; a missing one is an empty string.

    `arguments` is the JSON text of a tool call, or the object already decoded.
    """
    data: object = arguments
    if isinstance(arguments, str):
        try:
            data = json.loads(arguments) if arguments.strip() else None
        except json.JSONDecodeError as err:
            raise ArgumentError(
                f"arguments are not valid JSON: {err.msg} "
                f"(line {err.lineno}, column {err.colno})"
            ) from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ArgumentError("arguments must be a JSON object")
    if unknown := sorted(str(key) for key in data if key not in spec.params):
        takes = ", ".join(spec.params) or "no parameters"
        raise ArgumentError(
            f"unknown parameter {unknown[0]!r}: {spec.name} takes {takes}"
        )
    values = dict.fromkeys(spec.params, "")
    for name, value in data.items():
        text = _as_text(spec.params[name], value)
        _check_passable(name, text)
        values[name] = text
    return values


def _as_text(param: Param, value: object) -> str:
    """Return the string form of a value, checked against the parameter's type."""
    if value is None or value == "":
        return ""
    if (text := CONVERTERS[param.type](value)) is not None:
        return text
    shown = json.dumps(value, ensure_ascii=False, default=str)
    if len(shown) > 40:
        shown = shown[:40] + "..."
    raise ArgumentError(
        f"parameter {param.name!r} must be {_article(param)}, got {shown}"
    )


# Each returns the argv form of a value, or None when the value has the wrong
# type. Booleans are checked first: in Python True is also an int.


def _string(value: object) -> str | None:
    if isinstance(value, bool):
        return _boolean(value)
    if isinstance(value, str | int | float):
        return str(value)
    return None


def _integer(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and INTEGER.fullmatch(value.strip()):
        return str(int(value))
    return None


def _number(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value):
        return str(value)
    if isinstance(value, str) and _is_finite_number(value):
        return value.strip()
    return None


def _boolean(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    return None


CONVERTERS: dict[str, Callable[[object], str | None]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
}


def _check_passable(name: str, text: str) -> None:
    """Refuse what no argv element can hold, before any process is started."""
    if "\0" in text:
        raise ArgumentError(f"parameter {name!r} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ArgumentError(f"parameter {name!r} is not valid Unicode text") from None


def _is_finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _article(param: Param) -> str:
    return f"an {param.type}" if param.type == "integer" else f"a {param.type}"
