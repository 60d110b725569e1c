"""The tool guard: a value never ends up in code that a shell or interpreter runs.

Tool files come in through the door an administrator uses (a TOML file in
tools/, read by load_folder); the commands that load run through the real
runner with values that would be shell code if anything parsed them.
"""

from itertools import product
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

from custom_components.desktop_assistant.tools import (
    ToolRegistry,
    build_argv,
    load_folder,
)
from custom_components.desktop_assistant.tools.guard import program_name
from custom_components.desktop_assistant.tools.runner import run_tool
from custom_components.desktop_assistant.tools.spec import Param, ToolSpec
from tests.harness.tool_files import WriteFolder

# What runs an interpreter for a tool: nothing, or a wrapper, in the
# spellings a tool file may use.
WRAPPERS = [
    [],
    ["env"],
    ["/usr/bin/env", "LANG=C"],
    ["env", "-i"],
    ["timeout", "5"],
    ["timeout", "-s", "KILL", "5"],
    ["nice"],
    ["nice", "-n", "10"],
    ["nohup"],
    ["stdbuf", "-oL"],
    ["xargs", "-0"],
    ["busybox"],
    ["setsid", "-w"],
    ["chrt", "-f", "10"],
    ["ionice", "-c", "3"],
    ["flock", "lockfile"],
    ["sudo", "-u", "nobody"],
    ["env", "nice", "timeout", "5"],
]
# An interpreter and the arguments that hand it {text} as code or as the
# script, in every spelling of its options: alone, joined, --flag=value, --.
AS_CODE = [
    *product(
        ["sh", "/bin/sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox sh"],
        [
            ["-c", "{text}"],
            ["-c", "--", "{text}"],
            ["-c", "-e", "{text}"],
            ["-ec", "{text}"],
            ["-ce", "{text}"],
            ["-c", "-o", "errexit", "{text}"],
            ["+o", "errexit", "-c", "{text}"],
            ["-c", "echo {text}"],
            ["{text}"],
            ["-s", "{text}"],
        ],
    ),
    *product(
        [
            "python",
            "python3",
            "python3.12",
            "/usr/bin/python3.14",
            "pypy3",
            "python3.12-dbg",
            "python3-dbg",
            "python3.13t",
            "python3.8dm",
        ],
        [
            ["-c", "{text}"],
            ["-uc", "{text}"],
            ["-Ic", "{text}"],
            ["-c{text}"],
            ["-W", "ignore", "-c", "{text}"],
            ["-c", "print('{text}')"],
            ["-m", "timeit", "x", "{text}"],
            ["{text}"],
            ["-u", "{text}"],
        ],
    ),
    *product(
        ["perl", "perl5.36"],
        [
            ["-e", "{text}"],
            ["-le", "{text}"],
            ["-ne", "{text}"],
            ["-E", "{text}"],
            ["-Mstrict", "-e", "{text}"],
            ["-e", "print '{text}'"],
            ["-e{text}"],
        ],
    ),
    *product(
        ["ruby", "ruby3.1"],
        [["-e", "{text}"], ["-we", "{text}"], ["-rjson", "-e", "{text}"], ["{text}"]],
    ),
    *product(
        ["node", "nodejs", "bun"],
        [
            ["-e", "{text}"],
            ["--eval", "{text}"],
            ["--eval={text}"],
            ["-p", "{text}"],
            ["--print", "{text}"],
            ["-pe", "{text}"],
            ["{text}"],
        ],
    ),
    ("deno", ["eval", "{text}"]),
    ("deno", ["eval", "--quiet", "{text}"]),
    ("deno", ["run", "{text}"]),
    ("bun", ["run", "{text}"]),
    ("php", ["-r", "{text}"]),
    ("php8.2", ["-nr", "{text}"]),
    ("lua", ["-e", "{text}"]),
    ("lua5.4", ["-e", "x=1", "{text}"]),
    ("Rscript", ["-e", "{text}"]),
    ("Rscript", ["--vanilla", "-e", "{text}"]),
    ("awk", ["{text}"]),
    ("gawk", ["-F,", "{text}"]),
    ("awk", ["-v", "x=1", "{text}"]),
    ("awk", ['BEGIN { print "{text}" }']),
    ("sed", ["s/a/{text}/"]),
    ("osascript", ["-e", "{text}"]),
    ("pwsh", ["-Command", "{text}"]),
    ("pwsh", ["-c", "{text}"]),
    ("pwsh", ["-File", "script.ps1", "{text}"]),
    ("fish", ["-c", "{text}"]),
    ("tclsh", ["{text}"]),
    ("watch", ["echo", "{text}"]),
    ("ssh", ["host", "echo", "{text}"]),
    ("ssh", ["{text}"]),
    ("perl", ["-n", "script.pl", "{text}"]),
    ("perl", ["-p", "script.pl", "{text}"]),
    ("perl", ["-i", "script.pl", "{text}"]),
    ("perl", ["-i.bak", "-pe", "s/a/b/", "{text}"]),
    ("perl", ["-lne", "print", "{text}"]),
    ("make", ["-C", "dir", "goal", "{text}"]),
    ("make", ["{text}"]),
    ("make", ["-f", "{text}"]),
    ("sqlite3", ["db.sqlite", "{text}"]),
    ("sqlite3", ["-cmd", "{text}", "db.sqlite"]),
    ("awk", ["-f", "{text}"]),
    ("sed", ["-e", "{text}", "file"]),
    ("sed", ["--expression={text}", "file"]),
    ("vi", ["-c", "{text}", "file"]),
    ("vim", ["file", "+{text}"]),
    ("ex", ["-c", "{text}"]),
    ("R", ["-e", "{text}"]),
    ("R", ["--vanilla", "-f", "{text}"]),
    ("ipython", ["-c", "{text}"]),
    ("ipython3", ["{text}"]),
    ("dc", ["-e", "{text}"]),
    ("dc", ["file", "{text}"]),
]
# A wrapper whose program would be chosen by the value.
AS_PROGRAM = [
    ["env", "{text}"],
    ["env", "X=1", "{text}"],
    ["env", "-S", "sh -c", "{text}"],
    ["env", "--split-string=sh -c", "{text}"],
    ["timeout", "5", "{text}"],
    ["timeout", "{text}", "sh"],
    ["nice", "{text}"],
    ["nohup", "{text}"],
    ["xargs", "{text}"],
    ["busybox", "{text}"],
    ["flock", "lockfile", "{text}"],
    ["flock", "lockfile", "-c", "{text}"],
    ["find", ".", "-exec", "sh", "-c", "{text}", ";"],
    ["find", ".", "-exec", "{text}", "{}", ";"],
    ["find", ".", "-execdir", "{text}", "{}", "+"],
    ["find", ".", "-ok", "{text}", "{}", ";"],
    ["find", ".", "-okdir", "{text}", "{}", ";"],
    ["find", ".", "-name", "x", "-exec", "rm", "{}", ";", "-exec", "{text}", ";"],
    ["git", "-C", "repo", "-c", "{text}", "status"],
    ["git", "-c{text}", "status"],
    ["git", "--config-env", "{text}", "status"],
    ["git", "--config-env={text}", "status"],
    ["git", "-C", "{text}", "status"],
    ["git", "{text}"],
    ["git", "rebase", "--exec", "{text}"],
    ["git", "rebase", "-x", "{text}"],
    ["git", "grep", "--open-files-in-pager={text}", "x"],
    ["git", "fetch", "--upload-pack", "{text}", "origin"],
    ["git", "grep", "-O{text}", "TODO"],
    ["git", "rebase", "-x{text}", "main"],
    ["git", "rebase", "--exe={text}", "main"],
    ["git", "rebase", "--exe", "{text}", "main"],
    ["git", "fetch", "--upload-p={text}", "origin"],
    ["git", "clone", "-u", "{text}", "src", "dst"],
    ["git", "clone", "-u{text}", "src", "dst"],
    ["git", "submodule", "foreach", "{text}"],
    ["git", "submodule", "--quiet", "foreach", "echo", "{text}"],
    ["git", "bisect", "run", "{text}"],
    ["git", "filter-branch", "--tree-filter", "{text}"],
    ["xargs", "-0", "{text}"],
    ["docker", "run", "alpine", "{text}"],
    ["docker", "exec", "box", "{text}"],
    ["podman", "run", "alpine", "{text}"],
    ["podman", "exec", "box", "{text}"],
    ["timeout", "5", "find", ".", "-exec", "{text}", ";"],
]
PARAMS = '[params.text]\ntype = "string"\ndescription = "what to say"\n'


def tool_file(command: list[str]) -> str:
    return f'description = "x"\ncommand = {json.dumps(command)}\n{PARAMS}'


def assert_refused(write_folder: WriteFolder, folder: Path, command: list[str]) -> None:
    write_folder(tools={"hostile": tool_file(command)})
    loaded = load_folder(folder)
    assert "hostile" not in loaded.tools, command
    (problem,) = loaded.problems
    index = next(i for i, element in enumerate(command) if "{text}" in element)
    assert (problem.file, problem.key) == ("tools/hostile.toml", f"command[{index}]")
    assert str(problem).startswith(f"tools/hostile.toml: command[{index}]: ")
    assert "{text}" in problem.message
    assert "code" in problem.message or "program" in problem.message


@pytest.mark.parametrize(
    ("interpreter", "arguments"),
    AS_CODE,
    ids=[f"{program} {' '.join(arguments)}" for program, arguments in AS_CODE],
)
def test_a_value_as_code_is_refused_behind_any_wrapper(
    write_folder: WriteFolder, folder: Path, interpreter: str, arguments: list[str]
) -> None:
    for wrapper in WRAPPERS:
        command = [*wrapper, *interpreter.split(), *arguments]
        assert_refused(write_folder, folder, command)


@pytest.mark.parametrize(
    ("word", "name"),
    [
        ("/usr/bin/python3.12-dbg", "python"),
        ("python3.13t", "python"),
        ("python3.8dm", "python"),
        ("Python3.14.EXE", "python"),
        ("python3-config", "python3-config"),
        ("sed", "sed"),
        ("mktemp", "mktemp"),
        ("lua5.4", "lua"),
    ],
)
def test_a_program_is_known_whatever_its_version_or_build(word: str, name: str) -> None:
    assert program_name(word) == name


@pytest.mark.parametrize("command", AS_PROGRAM, ids=" ".join)
def test_a_value_that_would_choose_the_program_is_refused(
    write_folder: WriteFolder, folder: Path, command: list[str]
) -> None:
    assert_refused(write_folder, folder, command)


@pytest.mark.parametrize(
    "command",
    [
        ["sh", "-c", "--", "{text}"],
        ["bash", "-c", "-e", "{text}"],
        ["env", "sh", "-c", "{text}"],
        ["timeout", "5", "sh", "-ec", "{text}"],
        ["nice", "sh", "-c", "-o", "errexit", "{text}"],
        [sys.executable, "-uc", "{text}"],
        [sys.executable, "-Ic", "{text}"],
        ["env", "LANG=C", sys.executable, "-W", "ignore", "-c", "{text}"],
    ],
    ids=lambda command: " ".join(Path(part).name for part in command),
)
def test_what_is_refused_would_have_run_the_value_as_code(
    write_folder: WriteFolder, folder: Path, tmp_path: Path, command: list[str]
) -> None:
    """Each refusal stops a real injection: run as written, the value is code."""
    assert_refused(write_folder, folder, command)
    marker = tmp_path / "touched"
    code = f"open({str(marker)!r}, 'w')" if sys.executable in command else None
    value = code or f"touch '{marker}'"
    subprocess.run(build_argv(command, {"text": value}), check=True, timeout=60)
    assert marker.exists()


def test_the_refusal_says_what_to_do(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(tools={"say": tool_file(["env", "bash", "-c", "-e", "{text}"])})
    (problem,) = load_folder(folder).problems
    assert str(problem) == (
        "tools/say.toml: command[4]: hands {text} to bash where it could be code,"
        " a script or an option: put it after the code or script, as an argument"
        " of its own (sh -c 'echo \"$1\"' sh {text})"
    )
    write_folder(tools={"say": tool_file(["sh", "-c", "echo {text}"])})
    (problem,) = load_folder(folder).problems
    assert str(problem) == (
        "tools/say.toml: command[2]: has {text} inside an element that sh reads"
        " as code, a script or an option: put the value after the code or script"
        " (sh -c 'echo \"$1\"' sh {text}), or make the script command[0]"
    )
    # The form the advice gives loads.
    write_folder(tools={"say": tool_file(["sh", "-c", 'echo "$1"', "sh", "{text}"])})
    assert load_folder(folder).problems == ()


HOSTILE = [
    "hi; touch {marker}",
    "$(touch {marker})",
    "`touch {marker}`",
    "'; touch {marker}; '",
    '"; touch {marker}; "',
    "hi\ntouch {marker}",
    "__import__('os').system('touch {marker}')",
]
PRINT_FIRST = 'printf "%s\\n" "$1"'


def loading_commands(tools_dir: Path) -> dict[str, list[str]]:
    """Commands the guard lets load: the value is argv data in each."""
    script = str(tools_dir / "echo.py")
    return {
        "plain": ["echo", "{text}"],
        "option": ["echo", "--say={text}"],
        "shell code with the value as $1": ["sh", "-c", PRINT_FIRST, "sh", "{text}"],
        "behind env": ["env", "LANG=C", "sh", "-c", PRINT_FIRST, "sh", "{text}"],
        "behind timeout and nice": ["timeout", "5", "nice", "echo", "{text}"],
        "a script run by python": [sys.executable, script, "{text}"],
        "a script run by python with a flag": [sys.executable, "-u", script, "{text}"],
        "find -exec": [
            *("find", str(tools_dir), "-maxdepth", "0", "-exec"),
            *("sh", "-c", PRINT_FIRST, "sh", "{text}", ";"),
        ],
    }


@pytest.mark.parametrize("hostile", HOSTILE)
async def test_no_value_runs_as_code_in_a_command_that_loads(
    write_folder: WriteFolder, folder: Path, tmp_path: Path, hostile: str
) -> None:
    marker = tmp_path / "touched"
    value = hostile.format(marker=marker)
    commands = loading_commands(folder / "tools")
    write_folder(
        tools={
            name.replace(" ", "_").replace("$", "").replace("-", "_"): tool_file(argv)
            for name, argv in commands.items()
        },
        scripts={
            "echo.py": "#!python\nimport sys\nprint(sys.argv[1])\n",
        },
    )
    loaded = load_folder(folder)
    assert loaded.problems == ()
    registry = ToolRegistry(loaded)
    for name in loaded.tools:
        said = await registry.async_run(name, {"text": value})
        assert said == (f"--say={value}" if name == "option" else value), name
        assert not marker.exists(), name
    assert len(loaded.tools) == len(commands)


# What the audit forced through: each command, and a value that makes it
# create {marker} if the program ran it.
FORCED = [
    (["make", "-C", "{dir}", "goal", "{text}"], "X=$(shell touch {marker})"),
    (["perl", "-n", "{dir}/script.pl", "{text}"], "touch {marker}|"),
    (["find", "{dir}", "-maxdepth", "0", "-exec", "{text}", "{marker}", ";"], "touch"),
    (["find", "{dir}", "-maxdepth", "0", "-ok", "{text}", "{marker}", ";"], "touch"),
    (["git", "-C", "{dir}", "-c", "{text}", "status"], "core.fsmonitor=touch {marker}"),
    (["xargs", "{text}", "{marker}"], "touch"),
    (["sqlite3", ":memory:", "{text}"], ".shell touch {marker}"),
    (["awk", "{text}"], 'BEGIN { system("touch {marker}") }'),
    (["sed", "-n", "{text}", "{dir}/script.pl"], "1e touch {marker}"),
    (["vi", "-es", "-c", "{text}"], "!touch {marker}"),
    (["docker", "run", "alpine", "{text}", "{marker}"], "touch"),
    (["R", "-e", "{text}"], 'system("touch {marker}")'),
    (["ipython", "-c", "{text}"], "open('{marker}', 'w')"),
    (["dc", "-e", "{text}"], "!touch {marker}"),
    (["ssh", "localhost", "{text}"], "touch {marker}"),
]


def concrete(command: list[str], where: Path) -> list[str]:
    """The command with the test's folder and its marker file filled in."""
    return [
        element.replace("{dir}", str(where)).replace("{marker}", str(where / "touched"))
        for element in command
    ]


def prepare(where: Path) -> Path:
    """What the programs read (a script, a Makefile, a repository); the marker."""
    (where / "script.pl").write_text("print;\n")
    (where / "Makefile").write_text("goal:\n\t@echo $(X)\n")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(where)], check=True)
    return where / "touched"


@pytest.mark.parametrize(("command", "value"), FORCED, ids=lambda x: str(x)[:40])
async def test_a_refused_command_forced_through_the_runner_runs_nothing(
    write_folder: WriteFolder,
    folder: Path,
    tmp_path: Path,
    command: list[str],
    value: str,
) -> None:
    marker = prepare(tmp_path)
    argv = concrete(command, tmp_path)
    assert_refused(write_folder, folder, argv)
    spec = ToolSpec(
        name="forced",
        description="x",
        command=tuple(argv),
        params={"text": Param(name="text", type="string", description="x")},
    )
    said = await run_tool(
        spec,
        {"text": value.replace("{marker}", str(marker))},
        tools_dir=folder / "tools",
        env=dict(os.environ),
    )
    index = command.index("{text}")
    assert said.startswith(f"error: not run: command[{index}] "), said
    assert not marker.exists()


@pytest.mark.parametrize(("command", "value"), FORCED, ids=lambda x: str(x)[:40])
def test_what_the_audit_forced_would_have_run(
    tmp_path: Path, command: list[str], value: str
) -> None:
    """Where the program is installed here, the refused command does run the value."""
    program = command[0]
    if shutil.which(program) is None or program in ("ssh", "docker"):
        pytest.skip(f"{program} is not installed here (or reaches out)")
    marker = prepare(tmp_path)
    argv = build_argv(
        concrete(command, tmp_path), {"text": value.replace("{marker}", str(marker))}
    )
    # find -ok asks first: the answer is yes.
    subprocess.run(
        argv, input=b"y\n", cwd=tmp_path, timeout=60, capture_output=True, check=False
    )
    assert marker.exists()


@pytest.mark.parametrize("hostile", HOSTILE)
async def test_after_the_code_or_script_every_element_is_data(
    write_folder: WriteFolder, folder: Path, tmp_path: Path, hostile: str
) -> None:
    """What the tool spec allows, `{name}` inside an element, loads after the code."""
    marker = tmp_path / "touched"
    value = hostile.format(marker=marker)
    code = "import json, sys; print(json.dumps(sys.argv[1:]))"
    write_folder(
        tools={
            "after_code": tool_file(
                [sys.executable, "-c", code, "{text}", "pre-{text}-post"]
            ),
            "after_script": tool_file(
                [sys.executable, str(folder / "tools" / "echo.py"), "--name={text}"]
            ),
        },
        scripts={"echo.py": "import sys\nprint(sys.argv[1])\n"},
    )
    loaded = load_folder(folder)
    assert loaded.problems == ()
    registry = ToolRegistry(loaded)
    said = await registry.async_run("after_code", {"text": value})
    assert json.loads(said) == [value, f"pre-{value}-post"]
    said = await registry.async_run("after_script", {"text": value})
    assert said == f"--name={value}"
    assert not marker.exists()


@pytest.mark.parametrize(
    "command",
    [
        ["git", "log", "--grep", "{text}"],
        ["git", "log", "--author={text}"],
        ["git", "commit", "-m", "{text}"],
        ["git", "status", "-uno", "--", "{text}"],
    ],
)
def test_gits_data_options_take_a_value(
    write_folder: WriteFolder, folder: Path, command: list[str]
) -> None:
    write_folder(tools={"history": tool_file(command)})
    loaded = load_folder(folder)
    assert loaded.problems == ()
    assert "history" in loaded.tools
