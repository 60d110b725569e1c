"""Running tools: argv without a shell, lookup, env, output cut, timeouts, errors."""

import asyncio
import json
import os
from pathlib import Path
import resource
import sys
import time

import pytest

from custom_components.desktop_assistant.tools import (
    ToolRegistry,
    build_argv,
    load_folder,
)
from tests.harness.tool_files import WriteFolder, write_script

# Writes its arguments as JSON to $ARGV_OUT, so even long ones arrive whole.
ARGV_DUMP = """
    #!python
    import json, os, sys
    with open(os.environ["ARGV_OUT"], "w", encoding="utf-8") as out:
        json.dump(sys.argv[1:], out)
    print("dumped")
"""
DUMP_TOOL = """
    description = "Show the arguments"
    command = ["argv.py", "{value}", "--fixed", "pre-{value}-post"]
    [params.value]
    type = "string"
    description = "Anything"
"""

HOSTILE = {
    "shell list": "x; rm -rf ~",
    "command substitution": "$(id)",
    "back-ticks": "`id`",
    "space": "a b",
    "option after a space": " --flag=1",
    "dash inside": "a-rf",
    "newline": "line one\nline two",
    "quotes": 'it\'s "quoted"',
    "unicode": "Zürich ☀ 東京",
    "variable": "$HOME",
    "glob": "*",
    "redirect": "> /tmp/x && echo",
    "another placeholder": "{value}",
    "100 kB": "y" * 100_000,
}


def dumped_argv(path: Path) -> list[str]:
    """The arguments argv.py received."""
    return json.loads(path.read_text(encoding="utf-8"))


def registry_for(folder: Path) -> ToolRegistry:
    loaded = load_folder(folder)
    assert loaded.problems == ()
    return ToolRegistry(loaded)


@pytest.fixture
def argv_out(tmp_path: Path) -> Path:
    return tmp_path / "argv.json"


@pytest.fixture
def dump_registry(
    write_folder: WriteFolder, folder: Path, argv_out: Path
) -> ToolRegistry:
    write_folder(
        tools={"dump": DUMP_TOOL},
        scripts={"argv.py": ARGV_DUMP},
        config=f'[env]\nARGV_OUT = "{argv_out}"\n',
    )
    return registry_for(folder)


OPTIONS = {"option with value": "--flag=1", "short options": "-rf", "dash": "-"}


@pytest.mark.parametrize("value", (HOSTILE | OPTIONS).values(), ids=HOSTILE | OPTIONS)
def test_build_argv_keeps_a_value_in_its_element(value: str) -> None:
    argv = build_argv(
        ("tool", "{value}", "--fixed", "pre-{value}-post"), {"value": value}
    )
    assert argv == ["tool", value, "--fixed", f"pre-{value}-post"]


def test_build_argv_with_a_1_mb_value() -> None:
    value = "z" * (1 << 20)
    argv = build_argv(("tool", "{value}"), {"value": value})
    assert argv == ["tool", value]


def test_build_argv_substitutes_missing_as_empty(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={
            "weather": """
                description = "Weather"
                command = ["weather.sh", "{place}", "{when}"]
                [params.place]
                type = "string"
                description = "City"
                [params.when]
                type = "string"
                description = "When"
            """
        }
    )
    spec = load_folder(folder).tools["weather"]
    assert build_argv(spec.command, {"place": "Rome", "when": ""}) == [
        "weather.sh",
        "Rome",
        "",
    ]


@pytest.mark.parametrize("value", HOSTILE.values(), ids=HOSTILE)
async def test_hostile_value_reaches_the_tool_as_one_argument(
    dump_registry: ToolRegistry, argv_out: Path, value: str
) -> None:
    result = await dump_registry.async_run("dump", json.dumps({"value": value}))
    assert result == "dumped"
    assert dumped_argv(argv_out) == [
        value,
        "--fixed",
        f"pre-{value}-post",
    ]


@pytest.mark.parametrize("value", OPTIONS.values(), ids=OPTIONS)
async def test_value_that_would_be_an_option_is_refused(
    dump_registry: ToolRegistry, argv_out: Path, value: str
) -> None:
    assert await dump_registry.async_run("dump", {"value": value}) == (
        "error: parameter 'value' may not start with \"-\": "
        "the command would read it as an option"
    )
    assert not argv_out.exists()  # noqa: ASYNC240


async def test_values_never_reach_a_shell(
    dump_registry: ToolRegistry, argv_out: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "pwned"
    for value in (
        f"x; touch {canary}",
        f"$(touch {canary})",
        f"`touch {canary}`",
        f"x && touch {canary}",
        f"x | touch {canary}",
    ):
        assert await dump_registry.async_run("dump", {"value": value}) == "dumped"
        assert dumped_argv(argv_out)[0] == value
    assert not canary.exists()


async def test_1_mb_value_is_refused_by_the_kernel_not_split(
    dump_registry: ToolRegistry, argv_out: Path
) -> None:
    # Linux takes at most 128 kB in one argv element; the value is not cut
    # into several, the start fails with a clear message.
    result = await dump_registry.async_run("dump", {"value": "z" * (1 << 20)})
    assert result == "error: argv.py could not be started: Argument list too long"
    assert not argv_out.exists()  # noqa: ASYNC240


async def test_value_no_argv_can_hold(dump_registry: ToolRegistry) -> None:
    assert await dump_registry.async_run("dump", {"value": "a\0b"}) == (
        "error: parameter 'value' contains a NUL character"
    )
    assert await dump_registry.async_run("dump", '{"value": "\\ud800"}') == (
        "error: parameter 'value' is not valid Unicode text"
    )


async def test_typed_values_as_text(
    write_folder: WriteFolder, folder: Path, argv_out: Path
) -> None:
    write_folder(
        tools={
            "typed": """
                description = "Typed"
                command = ["argv.py", "{n}", "{x}", "{flag}", "{text}"]
                [params.n]
                type = "integer"
                description = "n"
                [params.x]
                type = "number"
                description = "x"
                [params.flag]
                type = "boolean"
                description = "flag"
                [params.text]
                type = "string"
                description = "text"
            """
        },
        scripts={"argv.py": ARGV_DUMP},
        config=f'[env]\nARGV_OUT = "{argv_out}"\n',
    )
    registry = registry_for(folder)

    await registry.async_run("typed", '{"n": 3, "x": 2.5, "flag": true, "text": 7}')
    assert dumped_argv(argv_out) == ["3", "2.5", "true", "7"]
    await registry.async_run("typed", {"n": "12", "x": "-1e3", "flag": "False"})
    assert dumped_argv(argv_out) == ["12", "-1e3", "false", ""]
    await registry.async_run("typed", {})
    assert dumped_argv(argv_out) == ["", "", "", ""]


async def test_tools_folder_comes_before_path(
    write_folder: WriteFolder, folder: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    write_script(bin_dir / "hello", "#!/bin/sh\necho from PATH\n")
    write_script(bin_dir / "only-on-path", "#!/bin/sh\necho only on PATH\n")
    write_folder(
        tools={
            "hello": 'description = "x"\ncommand = ["hello"]\n',
            "other": 'description = "x"\ncommand = ["only-on-path"]\n',
        },
        scripts={"hello": "#!/bin/sh\necho from tools\n"},
        config=f'[env]\nPATH = "{bin_dir}:{os.environ["PATH"]}"\n',
    )
    registry = registry_for(folder)
    assert await registry.async_run("hello") == "from tools"
    assert await registry.async_run("other") == "only on PATH"


async def test_program_with_a_slash_is_not_looked_up(
    write_folder: WriteFolder, folder: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "elsewhere" / "hello", "#!/bin/sh\necho elsewhere\n"
    )
    write_folder(
        tools={"hello": f'description = "x"\ncommand = ["{script}"]\n'},
        scripts={"hello": "#!/bin/sh\necho from tools\n"},
    )
    assert await registry_for(folder).async_run("hello") == "elsewhere"


async def test_env_reaches_the_tool_with_the_process_environment(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={"env": 'description = "x"\ncommand = ["env.py"]\n'},
        scripts={
            "env.py": """
                #!python
                import json, os, sys
                names = ("SEARXNG_URL", "PATH")
                with open(sys.argv[0] + ".json", "w") as out:
                    json.dump({name: os.environ.get(name) for name in names}, out)
                print("using", os.environ["SEARXNG_URL"])
            """
        },
        config='[env]\nSEARXNG_URL = "http://searxng.example.org"\n',
    )
    seen_file = folder / "tools" / "env.py.json"
    # The value reaches the tool; what the tool prints of it does not come back.
    assert await registry_for(folder).async_run("env") == "using ***"
    assert json.loads(seen_file.read_text()) == {
        "SEARXNG_URL": "http://searxng.example.org",
        "PATH": os.environ["PATH"],
    }


async def test_output_is_stripped(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={
            "say": """
                description = "x"
                command = ["printf", "\\n\\t  sunny, 21 C  \\n\\n"]
            """
        }
    )
    assert await registry_for(folder).async_run("say") == "sunny, 21 C"


async def test_empty_output(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(tools={"quiet": 'description = "x"\ncommand = ["true"]\n'})
    assert await registry_for(folder).async_run("quiet") == ""


async def test_100_mb_producer_is_cut_at_2000_characters(
    write_folder: WriteFolder, folder: Path, tmp_path: Path
) -> None:
    finished = tmp_path / "finished"
    write_folder(
        tools={"flood": 'description = "x"\ncommand = ["flood.py"]\ntimeout = 60\n'},
        scripts={
            "flood.py": """
                #!python
                import os, sys
                line = "".join(chr(0x41 + i % 26) for i in range(1023)) + "\\n"
                chunk = (line * 64).encode()
                for _ in range(1600):  # 1600 x 64 kB = 100 MB
                    sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
                open(os.environ["FINISHED"], "w").close()
            """
        },
        config=f'[env]\nFINISHED = "{finished}"\n',
    )
    registry = registry_for(folder)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = await registry.async_run("flood")
    peak_growth_mb = (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    ) / 1024
    print(f"100 MB producer: peak RSS growth {peak_growth_mb:.1f} MB")
    line = "".join(chr(0x41 + i % 26) for i in range(1023)) + "\n"
    # The answer, not the tool's timeout of 60 s: the producer was stopped
    # long before writing it all.
    assert result == (line * 2)[:2000]
    assert not finished.exists()
    assert peak_growth_mb < 20


async def test_timeout_kills_the_tool_and_its_children(
    write_folder: WriteFolder, folder: Path, tmp_path: Path
) -> None:
    child_pid = tmp_path / "child.pid"
    write_folder(
        tools={"slow": 'description = "x"\ncommand = ["slow.sh"]\ntimeout = 0.5\n'},
        scripts={
            "slow.sh": """
                #!/bin/sh
                sleep 300 &
                echo $! > "$CHILD_PID"
                echo "still waiting for the server" >&2
                sleep 300
            """
        },
        config=f'[env]\nCHILD_PID = "{child_pid}"\n',
    )
    result = await registry_for(folder).async_run("slow")
    assert result == (
        "error: slow.sh timed out after 0.5 s: still waiting for the server"
    )
    assert await child_gone(child_pid)


async def test_children_left_behind_by_a_finished_tool_are_killed(
    write_folder: WriteFolder, folder: Path, tmp_path: Path
) -> None:
    child_pid = tmp_path / "child.pid"
    write_folder(
        tools={"leaves": 'description = "x"\ncommand = ["leaves.sh"]\n'},
        scripts={
            "leaves.sh": """
                #!/bin/sh
                sleep 300 > /dev/null 2>&1 &
                echo $! > "$CHILD_PID"
                echo done
            """
        },
        config=f'[env]\nCHILD_PID = "{child_pid}"\n',
    )
    assert await registry_for(folder).async_run("leaves") == "done"
    assert await child_gone(child_pid)


async def child_gone(pid_file: Path) -> bool:
    """Return whether the process has died (a zombie counts) within ten seconds.

    SIGKILL sent to a group is delivered asynchronously: a grandchild the
    runner cannot wait for may take a moment to die.
    """
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process_state(pid_file) in (None, "Z"):
            return True
        await asyncio.sleep(0.01)
    return False


def process_state(pid_file: Path) -> str | None:
    """Return the state letter (R, S, Z, ...) of the process, None if it is gone."""
    pid = int(pid_file.read_text())
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


async def test_nonzero_exit_gives_stderrs_last_line(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={"fail": 'description = "x"\ncommand = ["fail.sh"]\n'},
        scripts={
            "fail.sh": """
                #!/bin/sh
                echo "partial output"
                echo "looking up Atlantis" >&2
                echo "city not found: Atlantis" >&2
                echo >&2
                exit 3
            """
        },
    )
    assert await registry_for(folder).async_run("fail") == (
        "error: fail.sh exited with status 3: city not found: Atlantis"
    )


async def test_nonzero_exit_without_stderr(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(tools={"false": 'description = "x"\ncommand = ["false"]\n'})
    assert await registry_for(folder).async_run("false") == (
        "error: false exited with status 1"
    )


async def test_killed_by_a_signal(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={"crash": 'description = "x"\ncommand = ["crash.sh"]\n'},
        scripts={"crash.sh": "#!/bin/sh\nkill -SEGV $$\n"},
    )
    assert await registry_for(folder).async_run("crash") == (
        "error: crash.sh was killed by SIGSEGV"
    )


async def test_missing_executable(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={
            "missing": 'description = "x"\ncommand = ["no-such-program-4e1f"]\n',
            "gone": 'description = "x"\ncommand = ["/nonexistent/weather.sh"]\n',
        }
    )
    registry = registry_for(folder)
    assert await registry.async_run("missing") == (
        "error: no-such-program-4e1f was found neither in tools/ nor on PATH"
    )
    assert await registry.async_run("gone") == (
        "error: /nonexistent/weather.sh could not be started: No such file or directory"
    )


async def test_helper_that_cannot_be_executed(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={
            "plain": 'description = "x"\ncommand = ["plain.rb"]\n',
            "noshebang": 'description = "x"\ncommand = ["noshebang"]\n',
        },
        scripts={"noshebang": "echo no interpreter line\n"},
    )
    (folder / "tools" / "plain.rb").write_text("#!/usr/bin/ruby\nputs 'hi'\n")
    registry = registry_for(folder)
    assert await registry.async_run("plain") == (
        "error: tools/plain.rb is not executable (chmod +x)"
    )
    assert await registry.async_run("noshebang") == (
        "error: noshebang could not be started: Exec format error"
    )


async def test_scripts_without_the_executable_bit_run_by_their_kind(
    write_folder: WriteFolder, folder: Path
) -> None:
    # As copied through Samba or the File editor: mode 644, no way to chmod.
    write_folder(
        tools={
            "py": 'description = "x"\ncommand = ["hello.py", "{who}"]\n'
            '[params.who]\ntype = "string"\ndescription = "who"\n',
            "sh": 'description = "x"\ncommand = ["hello.sh", "{who}"]\n'
            '[params.who]\ntype = "string"\ndescription = "who"\n',
        },
    )
    tools = folder / "tools"
    # No interpreter line: which Python runs it is up to the runner.
    (tools / "hello.py").write_text(
        "import sys\nprint('py', sys.argv[1], sys.executable)\n"
    )
    (tools / "hello.sh").write_text('echo "sh $1 $0"\n')
    for script in ("hello.py", "hello.sh"):
        assert not os.access(tools / script, os.X_OK)
    registry = registry_for(folder)
    assert await registry.async_run("py", {"who": "a b; c"}) == (
        f"py a b; c {sys.executable}"
    )
    assert await registry.async_run("sh", {"who": "a b; c"}) == (
        f"sh a b; c {tools / 'hello.sh'}"
    )
