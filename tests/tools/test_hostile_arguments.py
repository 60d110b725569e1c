"""Hostile arguments: every one answers `error: ...` text, none raises.

Sent the ways a person and the model send them: the tools command line
(JSON text) and the registry (JSON text, or an object already decoded, as
the run_tool action and Home Assistant's LLM API pass it).
"""

import json
from pathlib import Path

import pytest

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from tests.harness.tool_files import WriteFolder

from .test_cli import cli

ECHO = """
    description = "Echo every kind of value"
    command = ["echo.py", "{text}", "{n}", "{x}", "--city={place}"]
    [params.text]
    type = "string"
    description = "text"
    [params.n]
    type = "integer"
    description = "n"
    [params.x]
    type = "number"
    description = "x"
    [params.place]
    type = "string"
    description = "place"
"""
# One line per argument, so a test sees exactly what each element became.
ECHO_PY = """
    #!python
    import sys
    print("\\n".join(repr(argument) for argument in sys.argv[1:]))
"""
DIGITS_300 = "9" * 300
DIGITS_400 = "4" * 400
DIGITS_5000 = "7" * 5000


@pytest.fixture
def echo_folder(write_folder: WriteFolder) -> Path:
    return write_folder(tools={"echo": ECHO}, scripts={"echo.py": ECHO_PY})


@pytest.fixture
def registry(echo_folder: Path) -> ToolRegistry:
    loaded = load_folder(echo_folder)
    assert loaded.problems == ()
    return ToolRegistry(loaded)


def run_cli(folder: Path, arguments: str) -> tuple[int, str]:
    done = cli("run", str(folder), "echo", arguments)
    assert done.stderr == ""
    return done.returncode, done.stdout.removesuffix("\n")


def echoed(*arguments: str) -> str:
    return "\n".join(repr(argument) for argument in arguments)


def test_twenty_digits_reach_the_tool(echo_folder: Path) -> None:
    # As many as a 64-bit integer has; a float keeps its exponent.
    twenty = "9" * 20
    text = json.dumps({"text": int(twenty), "n": f"-{twenty}", "x": 1.5e300})
    assert run_cli(echo_folder, text) == (
        0,
        echoed(twenty, f"-{twenty}", "1.5e+300", "--city="),
    )
    # A float too big for a double is no number.
    assert run_cli(echo_folder, f'{{"x": {DIGITS_300}.5e999}}') == (
        1,
        "error: parameter 'x' must be a number, got Infinity",
    )


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"n": int(DIGITS_400)}, "error: parameter 'n' has over 20 digits"),
        ({"n": "-" + DIGITS_400}, "error: parameter 'n' has over 20 digits"),
        ({"n": 1e25}, "error: parameter 'n' has over 20 digits"),
        ({"x": -int(DIGITS_400)}, "error: parameter 'x' has over 20 digits"),
        ({"x": "0." + DIGITS_400}, "error: parameter 'x' has over 20 digits"),
        ({"text": int(DIGITS_400)}, "error: parameter 'text' has over 20 digits"),
        (
            json.dumps({"n": int(DIGITS_400)}),
            "error: a number in the arguments has over 20 digits",
        ),
        ({"n": 10**20}, "error: parameter 'n' has over 20 digits"),
    ],
    ids=[
        "integer",
        "integer as text",
        "float for an integer",
        "number",
        "number as text",
        "integer for a string",
        "JSON text",
        "21 digits",
    ],
)
async def test_a_400_digit_number_is_an_error_for_the_model(
    registry: ToolRegistry, arguments: object, error: str
) -> None:
    assert await registry.async_run("echo", arguments) == error  # type: ignore[arg-type]
    # Digits in text for a string are text, and the next call works.
    assert await registry.async_run("echo", {"text": DIGITS_400[:30], "n": 7}) == (
        echoed(DIGITS_400[:30], "7", "", "--city=")
    )


def test_hostile_json_on_the_command_line(echo_folder: Path) -> None:
    assert run_cli(echo_folder, f'{{"text": [-{DIGITS_5000}]}}') == (
        1,
        "error: a number in the arguments has over 20 digits",
    )
    assert run_cli(echo_folder, f'{{"n": "{DIGITS_5000}"}}') == (
        1,
        "error: parameter 'n' has over 20 digits",
    )
    # As deep as one argv element can hold (128 kB).
    assert run_cli(echo_folder, '{"text": ' + "[" * 60_000 + "]" * 60_000 + "}") == (
        1,
        "error: parameter 'text' must be a string, got " + "[" * 40 + "...",
    )


def test_5000_digit_string_is_text_for_a_string(echo_folder: Path) -> None:
    # The model receives the first 2000 characters of what the tool printed.
    assert run_cli(echo_folder, json.dumps({"text": DIGITS_5000})) == (
        0,
        repr(DIGITS_5000)[:2000],
    )


def nested(depth: int) -> object:
    value: object = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"n": 10**5000}, "error: parameter 'n' has over 20 digits"),
        ({"x": -(10**5000)}, "error: parameter 'x' has over 20 digits"),
        ({"text": 10**5000}, "error: parameter 'text' has over 20 digits"),
        (
            {"text": nested(300_000)},
            "error: parameter 'text' must be a string, "
            "got a list too deep or too large to show",
        ),
        (
            {"text": [10**5000]},
            "error: parameter 'text' must be a string, "
            "got a list too deep or too large to show",
        ),
        ({10**5000: 1}, "error: unknown parameter a number of over 20 digits: "),
        (
            {"z" * 100_000: 1},
            f"error: unknown parameter '{'z' * 40}...': ",
        ),
        (
            '{"text": ' + "[" * 300_000 + "]" * 300_000 + "}",
            "error: arguments are nested too deeply",
        ),
        (
            '{"n": ' + '{"a": ' * 300_000 + "1" + "}" * 300_001,
            "error: arguments are nested too deeply",
        ),
        (
            f'{{"n": {DIGITS_5000}}}',
            "error: a number in the arguments has over 20 digits",
        ),
        (f'{{"n": "-{DIGITS_5000}"}}', "error: parameter 'n' has over 20 digits"),
    ],
    ids=[
        "decoded 5001-digit integer",
        "decoded negative 5001-digit number",
        "decoded 5001-digit integer for a string",
        "decoded lists 300,000 deep",
        "decoded huge number in a list",
        "decoded huge number as a key",
        "100 kB key",
        "JSON lists 300,000 deep",
        "JSON objects 300,000 deep",
        "JSON 5000-digit number",
        "negative 5000-digit integer string",
    ],
)
async def test_hostile_values_through_the_registry(
    registry: ToolRegistry, arguments: object, expected: str
) -> None:
    result = await registry.async_run("echo", arguments)  # type: ignore[arg-type]
    if expected.endswith(": "):
        assert result == expected + "echo takes text, n, x, place"
    else:
        assert result == expected
    assert await registry.async_run("echo", {"n": -3}) == echoed(
        "", "-3", "", "--city="
    )


def test_value_that_would_be_an_option_is_refused_on_the_command_line(
    echo_folder: Path,
) -> None:
    assert run_cli(echo_folder, json.dumps({"text": "--output=/etc/passwd"})) == (
        1,
        "error: parameter 'text' may not start with \"-\": "
        "the command would read it as an option",
    )


@pytest.mark.parametrize("value", ["-rf", "-", "-5", "--", -5, -0.5], ids=repr)
async def test_value_that_would_be_an_option_is_refused(
    registry: ToolRegistry, value: object
) -> None:
    assert await registry.async_run("echo", {"text": value}) == (
        "error: parameter 'text' may not start with \"-\": "
        "the command would read it as an option"
    )


def test_dashes_that_cannot_be_options_pass(echo_folder: Path) -> None:
    # Numbers may be negative, a prefixed placeholder is safe, and a dash
    # inside or after a space starts no option.
    arguments = {"text": " -rf", "n": "-12", "x": -0.5, "place": "--city=-x"}
    assert run_cli(echo_folder, json.dumps(arguments)) == (
        0,
        echoed(" -rf", "-12", "-0.5", "--city=--city=-x"),
    )


async def test_option_check_follows_the_value_that_starts_the_element(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={
            "pair": """
                description = "Two values in one element"
                command = ["echo.py", "{first}{second}"]
                [params.first]
                type = "string"
                description = "first"
                [params.second]
                type = "string"
                description = "second"
            """
        },
        scripts={"echo.py": ECHO_PY},
    )
    registry = ToolRegistry(load_folder(folder))
    refused = (
        "error: parameter 'second' may not start with \"-\": "
        "the command would read it as an option"
    )
    # An empty first value leaves the second at the start of the element.
    assert await registry.async_run("pair", {"second": "-rf"}) == refused
    assert await registry.async_run("pair", {"first": "a", "second": "-rf"}) == (
        echoed("a-rf")
    )
