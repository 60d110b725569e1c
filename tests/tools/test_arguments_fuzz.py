"""Fuzzing tool-argument parsing: whatever arrives, values or ArgumentError.

500 examples per test in CI; HYPOTHESIS_PROFILE=nightly for 10,000 (tests/fuzz.py).
"""

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from custom_components.desktop_assistant.tools import (
    ArgumentError,
    build_argv,
    parse_arguments,
)
from custom_components.desktop_assistant.tools.loader import parse_tool
from custom_components.desktop_assistant.tools.spec import ToolSpec
from tests.harness.fuzz import FUZZ_TIMEOUT

pytestmark = FUZZ_TIMEOUT
# The profile's size and deadline; large argument values are the point here.
FUZZ = settings(
    settings.default,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def spec() -> ToolSpec:
    problems: list[str] = []
    tool = parse_tool(
        "fuzz",
        {
            "description": "Every type, whole and prefixed",
            "command": ["tool", "{s}", "{i}", "{n}", "{b}", "--s={s}", "{i}{s}"],
            "params": {
                name: {"type": kind, "description": name}
                for name, kind in (
                    ("s", "string"),
                    ("i", "integer"),
                    ("n", "number"),
                    ("b", "boolean"),
                )
            },
        },
        lambda key, message: problems.append(f"{key}: {message}"),
    )
    assert tool is not None, problems
    return tool


SPEC = spec()
NAMES = st.sampled_from([*SPEC.params, "other", ""])
HUGE_INTEGERS = (
    st.integers(min_value=0, max_value=6000).map(lambda digits: 10**digits - 1)
    | st.integers()
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | HUGE_INTEGERS
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.builds(
        lambda space, sign, digits: f"{space}{sign}{'9' * digits}{space}",
        st.sampled_from(["", " ", "\t"]),
        st.sampled_from(["", "+", "-"]),
        st.integers(min_value=1, max_value=6000),
    )
    | st.text(max_size=10).map(lambda text: "-" + text)
)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
ARGUMENTS = st.dictionaries(NAMES, VALUES, max_size=5)


def check(arguments: object) -> None:
    """parse_arguments answers values for every parameter or ArgumentError."""
    try:
        values = parse_arguments(SPEC, arguments)  # type: ignore[arg-type]
    except ArgumentError as err:
        assert str(err)
        return
    assert set(values) == set(SPEC.params)
    assert all(isinstance(value, str) for value in values.values())
    argv = build_argv(SPEC.command, values)
    # No value makes an element an option unless it is a number.
    for element, template in zip(argv[1:], SPEC.command[1:], strict=True):
        if element.startswith("-") and not template.startswith("-"):
            assert template in ("{i}", "{n}", "{i}{s}")
            assert element.lstrip("-")[:1].isdigit() or element.startswith("-.")


@FUZZ
@given(ARGUMENTS | VALUES)
def test_decoded_arguments(arguments: object) -> None:
    check(arguments)


def _json_text(value: object) -> str:
    try:
        return json.dumps(value)
    except ValueError:
        # Python refuses to write ints past 4300 digits; JSON allows them.
        return "[" + "9" * 5000 + "]"


JSON_TEXT = ARGUMENTS.map(_json_text) | VALUES.map(_json_text)
JSON_LIKE = st.text(alphabet='{}[]":,-+.0123456789eEtrufalsn \\ud800', max_size=200)
DEEP = st.integers(min_value=1, max_value=400_000).map(
    lambda depth: '{"s": ' + "[" * depth + "]" * depth + "}"
)


# Text as a model writes it, as a stream cut mid-value leaves it, and noise.
TEXT = (
    JSON_TEXT
    | JSON_TEXT.map(lambda text: text[: len(text) // 2])
    | JSON_LIKE
    | DEEP
    | st.text()
)


@FUZZ
@given(TEXT)
def test_json_text(arguments: str) -> None:
    check(arguments)
