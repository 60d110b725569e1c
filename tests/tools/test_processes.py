"""Tool processes: children left behind, at most 8 at once, file descriptors, lookup."""

import asyncio
from collections.abc import Iterator
import os
from pathlib import Path
import resource
import signal
import time

import pytest

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from custom_components.desktop_assistant.tools.registry import MAX_RUNNING
from custom_components.desktop_assistant.tools.runner import SETTLE_TIME
from tests.harness.tool_files import WriteFolder

from .test_runner import child_gone, process_state

# Prints its answer and exits 0, leaving a child that keeps stdout and
# stderr open: how `cmd &` in a script, or a helper starting a daemon, looks.
LEAVES_A_CHILD = """
    #!python
    import os, sys, time
    how = sys.argv[1]
    if os.fork() == 0:
        if how in ("setsid", "daemon", "scrubbed"):
            os.setsid()
        if how == "daemon":
            # Double fork, output to /dev/null: nothing ties it to the tool.
            if os.fork():
                os._exit(0)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
        with open(os.environ["CHILD_PID"], "w") as out:
            out.write(str(os.getpid()))
        if how == "scrubbed":
            os.execve("/bin/sleep", ["sleep", "300"], {})
        time.sleep(300)
        os._exit(0)
    while not os.path.exists(os.environ["CHILD_PID"]):
        time.sleep(0.01)
    print("the answer")
"""
LEAVER_TOOL = """
    description = "Answers and leaves a child"
    command = ["leaver.py", "{how}"]
    timeout = 20
    [params.how]
    type = "string"
    description = "plain, setsid, daemon or scrubbed"
"""


@pytest.fixture
def child_pid(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "child.pid"
    yield path
    # A child the runner is documented not to reach is the test's to kill.
    if path.exists() and process_state(path) not in (None, "Z"):
        os.kill(int(path.read_text()), signal.SIGKILL)


@pytest.fixture
def leaver(write_folder: WriteFolder, folder: Path, child_pid: Path) -> ToolRegistry:
    write_folder(
        tools={"leaver": LEAVER_TOOL},
        scripts={"leaver.py": LEAVES_A_CHILD},
        config=f'[env]\nCHILD_PID = "{child_pid}"\n',
    )
    return ToolRegistry(load_folder(folder))


@pytest.mark.parametrize("how", ["plain", "setsid", "daemon"])
async def test_child_left_behind_is_killed_and_the_answer_comes_promptly(
    leaver: ToolRegistry, child_pid: Path, how: str
) -> None:
    started = time.monotonic()
    assert await leaver.async_run("leaver", {"how": how}) == "the answer"
    # Not the 20 s timeout, nor the wait for pipes nobody closes.
    assert time.monotonic() - started < SETTLE_TIME
    assert await child_gone(child_pid)


async def test_limit_a_child_with_a_cleared_environment_is_not_found(
    leaver: ToolRegistry, child_pid: Path
) -> None:
    # It left the process group and carries no mark: the runner cannot tell
    # it from any other process. The answer still comes, after SETTLE_TIME
    # instead of the timeout, and the child lives on (see tools/reaper.py).
    started = time.monotonic()
    assert await leaver.async_run("leaver", {"how": "scrubbed"}) == "the answer"
    assert SETTLE_TIME <= time.monotonic() - started < SETTLE_TIME + 10
    assert process_state(child_pid) not in (None, "Z")


HOLD_TOOL = """
    description = "Runs until released"
    command = ["hold.py"]
    timeout = 30
"""
HOLD_PY = """
    #!python
    import os, time
    running = os.path.join(os.environ["RUN_DIR"], str(os.getpid()))
    open(running, "w").close()
    while not os.path.exists(os.environ["RELEASE"]):
        time.sleep(0.01)
    os.remove(running)
    print("released")
"""


async def test_at_most_8_tools_run_at_once_and_waiting_counts_in_the_timeout(
    write_folder: WriteFolder, folder: Path, tmp_path: Path
) -> None:
    run_dir, release = tmp_path / "running", tmp_path / "release"
    run_dir.mkdir()
    write_folder(
        tools={
            "hold": HOLD_TOOL,
            "quick": 'description = "x"\ncommand = ["echo", "quick"]\ntimeout = 0.5\n',
        },
        scripts={"hold.py": HOLD_PY},
        config=f'[env]\nRUN_DIR = "{run_dir}"\nRELEASE = "{release}"\n',
    )
    registry = ToolRegistry(load_folder(folder))
    holds = [asyncio.create_task(registry.async_run("hold")) for _ in range(20)]
    await running(run_dir, MAX_RUNNING)
    await asyncio.sleep(0.5)
    assert len(os.listdir(run_dir)) == MAX_RUNNING

    # A ninth tool waits for a slot, and its timeout runs while it waits.
    assert await registry.async_run("quick") == (
        "error: echo timed out after 0.5 s waiting for other tools to finish"
    )
    release.touch()
    assert await asyncio.gather(*holds) == ["released"] * 20
    assert await registry.async_run("quick") == "quick"


async def running(run_dir: Path, count: int) -> None:
    """Wait until `count` hold.py processes are running."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if len(os.listdir(run_dir)) >= count:
            return
        await asyncio.sleep(0.05)


async def test_many_tools_at_once_never_run_out_of_file_descriptors(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(tools={"echo": 'description = "x"\ncommand = ["echo", "hi"]\n'})
    registry = ToolRegistry(load_folder(folder))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    # Room for 8 tools (a few descriptors each), not for 100.
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 64, hard))
    try:
        results = await asyncio.gather(
            *(registry.async_run("echo") for _ in range(100))
        )
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert results == ["hi"] * 100


async def test_executable_lookup_leaves_the_event_loop_free(
    write_folder: WriteFolder, folder: Path, tmp_path: Path
) -> None:
    # A PATH this long takes shutil.which a good part of a second to search.
    path = ":".join(str(tmp_path / "nowhere" / str(index)) for index in range(30_000))
    write_folder(
        tools={"lost": 'description = "x"\ncommand = ["no-such-program-9c2d"]\n'},
        config=f'[env]\nPATH = "{path}"\n',
    )
    registry = ToolRegistry(load_folder(folder))
    longest_gap = 0.0
    running = True

    async def tick() -> None:
        nonlocal longest_gap
        last = time.monotonic()
        while running:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            longest_gap = max(longest_gap, now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    started = time.monotonic()
    result = await registry.async_run("lost")
    took = time.monotonic() - started
    running = False
    await ticker
    assert result == (
        "error: no-such-program-9c2d was found neither in tools/ nor on PATH"
    )
    print(f"lookup {took:.3f} s, longest event-loop gap {longest_gap:.3f} s")
    # Long enough that, on the loop, it would be the longest gap.
    assert took > 0.05
    assert longest_gap < took / 2
