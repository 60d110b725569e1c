"""Turn a model's (or a person's) arguments into the strings put into argv.

Whatever the arguments hold (numbers of any size, any nesting, any text),
the answer is the values or an ArgumentError; nothing else is raised. A
number reaches a tool with at most MAX_DIGITS digits.
"""

from collections.abc import Callable, Mapping
import json
import math
import re
from typing import Any

from .spec import PLACEHOLDER, Param, ToolSpec

INTEGER = re.compile(r"[+-]?\d+")
# A number as people write it, in ASCII digits: passed on as written.
PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
DIGIT = re.compile(r"\d")
# As many digits as a 64-bit integer has: no tool needs a longer number, and
# one of hundreds of digits is a model gone wrong, not a value to pass on.
MAX_DIGITS = 20
BIGGEST = 10**MAX_DIGITS
# How much of a wrong value an error message quotes.
PREVIEW = 40


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
        data = _decode(arguments)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ArgumentError("arguments must be a JSON object")
    if unknown := sorted(_key(key) for key in data if key not in spec.params):
        takes = ", ".join(spec.params) or "no parameters"
        raise ArgumentError(
            f"unknown parameter {unknown[0]}: {spec.name} takes {takes}"
        )
    values = dict.fromkeys(spec.params, "")
    for name, value in data.items():
        text = _as_text(spec.params[name], value)
        _check_passable(name, text)
        values[name] = text
    _check_no_option(spec, values)
    return values


def _decode(text: str) -> object:
    if not text.strip():
        return None
    try:
        return json.loads(text, parse_int=_json_integer)
    except json.JSONDecodeError as err:
        raise ArgumentError(
            f"arguments are not valid JSON: {err.msg} "
            f"(line {err.lineno}, column {err.colno})"
        ) from None
    except RecursionError:
        raise ArgumentError("arguments are nested too deeply") from None


def _json_integer(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise ArgumentError(f"a number in the arguments has over {MAX_DIGITS} digits")
    return int(digits)


def _as_text(param: Param, value: object) -> str:
    """Return the string form of a value, checked against the parameter's type."""
    if value is None or value == "":
        return ""
    if _too_many_digits(param, value):
        raise ArgumentError(f"parameter {param.name!r} has over {MAX_DIGITS} digits")
    if (text := CONVERTERS[param.python_type](value)) is not None:
        return text
    raise ArgumentError(
        f"parameter {param.name!r} must be {_article(param)}, got {_preview(value)}"
    )


def _too_many_digits(param: Param, value: object) -> bool:
    """Whether the value would reach the tool as a number of over MAX_DIGITS digits.

    A float is written with an exponent, except for an integer parameter,
    which gets all its digits.
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) >= BIGGEST
    if isinstance(value, float):
        return (
            param.python_type is int
            and math.isfinite(value)
            and (abs(value) >= BIGGEST)
        )
    if isinstance(value, str) and param.python_type in (int, float):
        return len(DIGIT.findall(value)) > MAX_DIGITS
    return False


def _key(key: object) -> str:
    """Return a parameter name as a message quotes it."""
    if isinstance(key, str):
        return repr(key[:PREVIEW] + "..." if len(key) > PREVIEW else key)
    return _preview(key)


def _preview(value: object) -> str:
    """Return the start of a value as JSON, for a message; never raises."""
    if isinstance(value, str):
        value = value[: PREVIEW + 1]
    elif isinstance(value, int) and abs(value) >= BIGGEST:
        return f"a number of over {MAX_DIGITS} digits"
    try:
        shown = json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, TypeError, ValueError):
        return f"a {type(value).__name__} too deep or too large to show"
    if len(shown) > PREVIEW:
        shown = shown[:PREVIEW] + "..."
    return shown


# Each returns the argv form of a value, or None when the value has the wrong
# type. Booleans are checked first: in Python True is also an int. Numbers
# past MAX_DIGITS never get here.


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
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(value)
    if isinstance(value, str) and _is_finite_number(value):
        text = value.strip()
        # Python also reads "1_000" and other scripts' digits ("١٢"): the
        # tool gets the number in the one way every program reads.
        return text if PLAIN_NUMBER.fullmatch(text) else str(float(text))
    return None


def _boolean(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    return None


# Keyed by the Python types of spec.PARAM_TYPES, where the type names are.
CONVERTERS: dict[type, Callable[[object], str | None]] = {
    str: _string,
    int: _integer,
    float: _number,
    bool: _boolean,
}


def _check_passable(name: str, text: str) -> None:
    """Refuse what no argv element can hold, before any process is started."""
    if "\0" in text:
        raise ArgumentError(f"parameter {name!r} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ArgumentError(f"parameter {name!r} is not valid Unicode text") from None


def _check_no_option(spec: ToolSpec, values: Mapping[str, str]) -> None:
    """Refuse text that would start an argument with `-`: it would be an option.

    Only the value that begins an element counts: `--city={place}` is safe
    whatever the place. Numbers may be negative.
    """
    for element in spec.command[1:]:
        position = 0
        while match := PLACEHOLDER.match(element, position):
            name = match[1]
            if values[name]:
                if spec.params[name].python_type is str and values[name][0] == "-":
                    raise ArgumentError(
                        f'parameter {name!r} may not start with "-": '
                        "the command would read it as an option"
                    )
                break
            position = match.end()


def _is_finite_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _article(param: Param) -> str:
    return f"an {param.type}" if param.type[0] in "aeiou" else f"a {param.type}"
