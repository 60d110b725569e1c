"""[env] values and API keys never come back from a tool, not even cut in half."""

import json
from pathlib import Path

import pytest

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from custom_components.desktop_assistant.tools.runner import OUTPUT_LIMIT, STDERR_TAIL
from tests.harness.tool_files import WriteFolder

from .test_cli import cli

SECRET = "Zq8-secret-value-41f7"
# Prints what argv asks: how much padding on stdout or stderr before and
# after the secret, so the secret can be put across any cut.
PRINT_PY = """
    #!python
    import os, sys
    stream, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out = sys.stdout if stream == "out" else sys.stderr
    out.write("a" * before + os.environ["SECRET"] + "b" * after)
    out.flush()
    sys.exit(0 if stream == "out" else 1)
"""
PRINT_TOOL = """
    description = "Prints the secret with padding"
    command = ["print.py", "{stream}", "{before}", "{after}"]
    [params.stream]
    type = "string"
    description = "out or err"
    [params.before]
    type = "integer"
    description = "padding before"
    [params.after]
    type = "integer"
    description = "padding after"
"""


@pytest.fixture
def registry(write_folder: WriteFolder) -> ToolRegistry:
    folder = write_folder(
        tools={"print": PRINT_TOOL},
        scripts={"print.py": PRINT_PY},
        config=f'[env]\nSECRET = "{SECRET}"\nSHORT = "Ciao"\n',
    )
    return ToolRegistry(load_folder(folder))


def pieces(secret: str) -> list[str]:
    """Every piece of the secret long enough to give it away."""
    return [secret[start : start + 6] for start in range(len(secret) - 5)]


@pytest.mark.parametrize(
    "before", [0, OUTPUT_LIMIT - 10, OUTPUT_LIMIT - 3, OUTPUT_LIMIT + 2, 70_000]
)
async def test_stdout_never_holds_the_secret(
    registry: ToolRegistry, before: int
) -> None:
    result = await registry.async_run(
        "print", {"stream": "out", "before": before, "after": 5000}
    )
    assert not any(piece in result for piece in pieces(SECRET))
    if before == 0:
        assert result.startswith("***bbb")


# How much of stderr's end is kept: a secret across its start is cut.
KEPT = STDERR_TAIL + 4 * len(SECRET)


@pytest.mark.parametrize(
    ("before", "after"),
    [(20, 10), (8000, 0), (8000, KEPT - 25), (8000, KEPT - 10), (8000, 70_000)],
)
async def test_stderr_never_holds_the_secret(
    registry: ToolRegistry, before: int, after: int
) -> None:
    result = await registry.async_run(
        "print", {"stream": "err", "before": before, "after": after}
    )
    assert result.startswith("error: print.py exited with status 1: ")
    assert not any(piece in result for piece in pieces(SECRET))
    if before == 20:
        assert result.endswith(": " + "a" * 20 + "***" + "b" * 10)


async def test_long_secret_cut_where_reading_stopped(
    write_folder: WriteFolder,
) -> None:
    # Reading stops after the first pipe-full; its end cuts a secret whose
    # start, once the secrets before it shrank to ***, falls in the answer.
    secret = "".join(f"{index:03d}" for index in range(100))
    folder = write_folder(
        tools={"flood": 'description = "x"\ncommand = ["flood.py"]\n'},
        scripts={
            "flood.py": """
                #!python
                import os, sys
                sys.stdout.write(os.environ["LONG_SECRET"] * 1000)
            """
        },
        config=f'[env]\nLONG_SECRET = "{secret}"\n',
    )
    result = await ToolRegistry(load_folder(folder)).async_run("flood")
    assert set(result) == {"*"}
    assert not any(piece in result for piece in pieces(secret))


async def test_values_named_in_shown_are_shown(write_folder: WriteFolder) -> None:
    folder = write_folder(
        tools={
            "home": 'description = "x"\ncommand = ["sh", "-c", "echo $HOME_TOWN $KEY"]\n'
        },
        config='shown = ["HOME_TOWN"]\n[env]\nHOME_TOWN = "Utrecht"\nKEY = "k-0d9f77"\n',
    )
    assert await ToolRegistry(load_folder(folder)).async_run("home") == "Utrecht ***"


async def test_api_key_is_a_secret_while_it_is_held(
    write_folder: WriteFolder,
) -> None:
    folder = write_folder(
        tools={"key": 'description = "x"\ncommand = ["echo", "sk-abc123 Ciao"]\n'},
        config='[env]\nSHORT = "Ciao"\n',
    )
    registry = ToolRegistry(load_folder(folder))
    release = registry.add_secret("sk-abc123")
    # Values under 6 characters are left alone: they would garble answers.
    assert await registry.async_run("key") == "*** Ciao"
    release()
    assert await registry.async_run("key") == "sk-abc123 Ciao"


def test_command_line_prints_no_secret(write_folder: WriteFolder) -> None:
    folder: Path = write_folder(
        tools={"print": PRINT_TOOL},
        scripts={"print.py": PRINT_PY},
        config=f'[env]\nSECRET = "{SECRET}"\n',
    )
    done = cli(
        "run", str(folder), "print", '{"stream": "out", "before": 3, "after": 0}'
    )
    assert (done.returncode, done.stdout) == (0, "aaa***\n")


ENCODED_PY = """
    #!python
    import json, os, urllib.parse
    secret = os.environ["PASSWORD"]
    print(json.dumps({"password": secret}))
    print(json.dumps({"password": secret}, ensure_ascii=False))
    print(json.dumps(secret).replace("/", "\\\\/"))
    print("https://example.org/login?p=" + urllib.parse.quote(secret))
    print(urllib.parse.quote(secret, safe="").lower())
"""


async def test_a_secret_written_as_json_or_in_a_url_is_hidden(
    write_folder: WriteFolder,
) -> None:
    password = 'pässwort/"41+f7='
    folder = write_folder(
        tools={"dump": 'description = "Dumps its config"\ncommand = ["dump.py"]\n'},
        scripts={"dump.py": ENCODED_PY},
        config=f"[env]\nPASSWORD = {json.dumps(password)}\n",
    )
    result = await ToolRegistry(load_folder(folder)).async_run("dump")
    assert result.splitlines() == [
        '{"password": "***"}',
        '{"password": "***"}',
        '"***"',
        "https://example.org/login?p=***",
        "***",
    ]
