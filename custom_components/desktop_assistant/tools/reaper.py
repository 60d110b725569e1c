"""Find and kill every process a tool run started, wherever it went.

Each run puts a random mark into the tool's environment, and every process
it starts inherits it, also one that left the process group with `setsid`
or forked twice to become a daemon. After the run, /proc is searched for
processes carrying the mark. The limit: a process that clears its
environment (`env -i`) or runs as another user carries no mark we can read;
it is left alone (and when it holds the tool's output pipe, the runner stops
reading after SETTLE_TIME instead of waiting for it).
"""

from collections.abc import Iterable
import contextlib
import os
import secrets
import signal

MARK_NAME = "DESKTOP_ASSISTANT_TOOL_RUN"
PROC = "/proc"
# A process forking as fast as it is killed cannot keep the search going.
ROUNDS = 5
PROBE_LIMIT = 256


def new_mark() -> str:
    """Return a value for MARK_NAME that no other run has."""
    return secrets.token_hex(16)


def kill_marked(mark: str, first_pid: int) -> None:
    """SIGKILL every process whose environment holds the mark.

    `first_pid` is the tool's: the kernel hands out pids in increasing order,
    so only it and larger ones can be its descendants, unless the numbers
    wrapped around meanwhile; then every process is looked at. Blocking (it
    reads /proc): run it in a thread.
    """
    entry = f"{MARK_NAME}={mark}".encode()
    for _ in range(ROUNDS):
        found = [pid for pid in _candidates(first_pid) if _is_marked(pid, entry)]
        for pid in found:
            _kill(pid, entry)
        if not found:
            break


def _candidates(first_pid: int) -> Iterable[int]:
    last_pid = _last_pid()
    if 0 <= last_pid - first_pid < PROBE_LIMIT:
        # Few pids were handed out since: trying each beats listing /proc.
        return range(first_pid, last_pid + 1)
    try:
        pids = [int(name) for name in os.listdir(PROC) if name.isdigit()]
    except OSError:
        return []
    return [pid for pid in pids if pid >= first_pid] if last_pid > first_pid else pids


def _last_pid() -> int:
    """The pid handed out last, or 0 when /proc does not say."""
    try:
        with open(f"{PROC}/sys/kernel/ns_last_pid", "rb") as file:
            return int(file.read())
    except (OSError, ValueError):
        return 0


def _is_marked(pid: int, entry: bytes) -> bool:
    try:
        fd = os.open(f"{PROC}/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        # Gone, or another user's: not ours either way.
        return False
    try:
        environ = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))
    except OSError:
        return False
    finally:
        os.close(fd)
    return entry in environ.split(b"\0")


def _kill(pid: int, entry: bytes) -> None:
    """Kill through a pidfd, checked again, so a reused pid is never hit."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if _is_marked(pid, entry):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)
