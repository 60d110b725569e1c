"""Tool processes: children left behind, at most 8 at once, file descriptors, lookup."""

import asyncio
from collections.abc import Iterator
import os
from pathlib import Path
import resource
import shutil
import signal
import threading
import time
from types import FrameType

import pytest

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from custom_components.desktop_assistant.tools.registry import MAX_RUNNING
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


@pytest.mark.parametrize(
    ("how", "holds_the_pipes"), [("plain", True), ("setsid", True), ("daemon", False)]
)
async def test_child_left_behind_is_killed_and_the_answer_comes_promptly(
    leaver: ToolRegistry, child_pid: Path, how: str, holds_the_pipes: bool
) -> None:
    # Not the 20 s timeout: the answer itself, though a child outlived the tool.
    assert await leaver.async_run("leaver", {"how": how}) == "the answer"
    if holds_the_pipes:
        # Nor the wait for pipes nobody closes: the answer came once the
        # child's descriptors were closed, so by then it had died.
        assert open_descriptors(child_pid) == []
    assert await child_gone(child_pid)


async def test_limit_a_child_with_a_cleared_environment_is_not_found(
    leaver: ToolRegistry, child_pid: Path
) -> None:
    # It left the process group and carries no mark: the runner cannot tell
    # it from any other process. The answer still comes (after SETTLE_TIME,
    # instead of the timeout) while the child lives on, still holding the
    # tool's output pipe (see tools/reaper.py).
    assert await leaver.async_run("leaver", {"how": "scrubbed"}) == "the answer"
    assert process_state(child_pid) not in (None, "Z")
    assert open_descriptors(child_pid) != []


def open_descriptors(pid_file: Path) -> list[str]:
    """Return the process's open file descriptors; none once it has exited."""
    try:
        return os.listdir(f"/proc/{pid_file.read_text()}/fd")
    except (FileNotFoundError, PermissionError):
        return []


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
    write_folder(
        tools={"lost": 'description = "x"\ncommand = ["no-such-program-9c2d"]\n'},
        config=f'[env]\nPATH = "{tmp_path / "nowhere"}"\n',
    )
    registry = ToolRegistry(load_folder(folder))
    loop_thread = threading.get_ident()
    lookups: list[int] = []

    def watch(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is shutil.which.__code__:
            lookups.append(threading.get_ident())

    # Sees which thread calls shutil.which, in every thread, changing nothing.
    threading.setprofile_all_threads(watch)
    try:
        result = await registry.async_run("lost")
    finally:
        threading.setprofile_all_threads(None)
    assert result == (
        "error: no-such-program-9c2d was found neither in tools/ nor on PATH"
    )
    # The lookup (a long PATH takes it a good part of a second) ran, off the loop.
    assert lookups
    assert loop_thread not in lookups
