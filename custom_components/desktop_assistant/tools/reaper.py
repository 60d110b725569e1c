"""Find and kill every process a tool run started, wherever it went.

Each run puts a random mark into the tool's environment, and every process
it starts inherits it, also one that left the process group with `setsid`
or forked twice to become a daemon. After the run, /proc is searched for
processes carrying the mark. The limit: a process that clears its
environment (`env -i`) or runs as another user carries no mark we can read;
it is left alone (and when it holds the tool's output pipe, the runner stops
reading after SETTLE_TIME instead of waiting for it).
"""

import contextlib
import os
from pathlib import Path
import secrets
import signal

MARK_NAME = "DESKTOP_ASSISTANT_TOOL_RUN"
PROC = Path("/proc")
# A process forking as fast as it is killed cannot keep the search going.
ROUNDS = 5


def new_mark() -> str:
    """Return a value for MARK_NAME that no other run has."""
    return secrets.token_hex(16)


def kill_marked(mark: str) -> int:
    """SIGKILL every process whose environment holds the mark; return how many.

    Blocking (it reads /proc): run it in a thread.
    """
    entry = f"{MARK_NAME}={mark}".encode()
    killed = 0
    for _ in range(ROUNDS):
        found = [pid for pid in _pids() if _is_marked(pid, entry)]
        for pid in found:
            killed += _kill(pid, entry)
        if not found:
            break
    return killed


def _pids() -> list[int]:
    try:
        names = os.listdir(PROC)
    except OSError:
        return []
    own = os.getpid()
    return [int(name) for name in names if name.isdigit() and int(name) != own]


def _is_marked(pid: int, entry: bytes) -> bool:
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        # Gone, or another user's: not ours either way.
        return False
    return entry in environ.split(b"\0")


def _kill(pid: int, entry: bytes) -> int:
    """Kill through a pidfd, checked again, so a reused pid is never hit."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return 0
    try:
        if not _is_marked(pid, entry):
            return 0
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return 1
    finally:
        os.close(pidfd)
