"""The command line: `check DIR` and `run DIR NAME JSON`."""

from pathlib import Path
import subprocess
import sys

import pytest

from custom_components.desktop_assistant.tools.__main__ import main
from tests.harness.tool_files import WriteFolder

REPO = Path(__file__).resolve().parents[2]
GREET = """
    description = "Greet someone"
    command = ["greet.sh", "{name}"]
    [params.name]
    type = "string"
    description = "Who"
"""
GREET_SH = """
    #!/bin/sh
    if [ -z "$1" ]; then echo "nobody to greet" >&2; exit 2; fi
    echo "  $GREETING, $1!  "
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the module the way a person does, from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "custom_components.desktop_assistant.tools", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_check_valid_folder(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(tools={"greet": GREET}, scripts={"greet.sh": GREET_SH})
    done = cli("check", str(folder))
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "ok: 1 tool: greet\n",
        "",
    )


def test_check_prints_every_problem(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={
            "greet": GREET,
            "bad": 'description = "x"\ncommand = ["echo", "{who}"]\ntimeout = "5"\n',
            "Bad-Name": 'description = "x"\ncommand = ["date"]\n',
        },
        config='colour = "blue"\n[env]\nGREETING = "Hello"\n',
    )
    done = cli("check", str(folder))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "config.toml: colour: unknown key: config.toml holds an [env] table "
        "and a shown list",
        "tools/Bad-Name.toml: bad tool name 'Bad-Name': "
        "the file name is the tool name, a-z 0-9 _",
        "tools/bad.toml: command[1]: {who} names no parameter (params: none)",
        "tools/bad.toml: timeout: must be a number of seconds",
    ]


def test_check_missing_and_empty_folders(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(folder)]) == 0
    assert capsys.readouterr().out == f"ok: no tools ({folder} does not exist)\n"
    (folder / "tools").mkdir(parents=True)
    assert main(["check", str(folder)]) == 0
    assert capsys.readouterr().out == "ok: no tools\n"


def test_run_prints_what_the_model_receives(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={"greet": GREET},
        scripts={"greet.sh": GREET_SH},
        config='[env]\nGREETING = "Ciao"\n',
    )
    done = cli("run", str(folder), "greet", '{"name": "Ada; rm -rf ~"}')
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "Ciao, Ada; rm -rf ~!\n",
        "",
    )


def test_run_errors(
    write_folder: WriteFolder, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_folder(
        tools={"greet": GREET, "broken": 'description = "x"\n'},
        scripts={"greet.sh": GREET_SH},
    )
    assert main(["run", str(folder), "greet"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "error: greet.sh exited with status 2: nobody to greet\n"
    assert captured.err == "tools/broken.toml: command: is missing (required)\n"

    assert main(["run", str(folder), "greet", "{name: Ada}"]) == 1
    assert capsys.readouterr().out == (
        "error: arguments are not valid JSON: Expecting property name enclosed "
        "in double quotes (line 1, column 2)\n"
    )
    assert main(["run", str(folder), "broken"]) == 1
    assert capsys.readouterr().out == "error: unknown tool 'broken' (tools: greet)\n"


def test_usage_error_is_short(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["frobnicate"])
    assert exited.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
