"""Run a tool's command: argv without a shell, bounded output, no child left behind."""

import asyncio
import codecs
from collections.abc import Mapping, Sequence
import contextlib
from dataclasses import dataclass, field
import os
from pathlib import Path
import shutil
import signal

from .spec import PLACEHOLDER, ToolSpec

# What the model receives at most, in characters.
OUTPUT_LIMIT = 2000
# Leading whitespace is skipped without limit otherwise; past this many bytes
# the output counts as read.
READ_LIMIT = 1 << 20
CHUNK = 1 << 16
# Enough of stderr's end to hold its last line.
STDERR_TAIL = 4096
LAST_LINE_LIMIT = 300
# After the process group is killed, how long its pipes may take to close.
SETTLE_TIME = 2.0


class CommandNotFound(Exception):
    """command[0] is in neither tools/ nor PATH, or cannot be executed."""


def build_argv(command: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """Return argv with each `{name}` replaced by that argument's string value.

    One pass per element: a value is never split, re-scanned or joined with
    another element, so it stays part of exactly one argument.
    """
    return [PLACEHOLDER.sub(lambda match: values[match[1]], part) for part in command]


def find_executable(program: str, tools_dir: Path, path: str | None) -> str:
    """Return the file to execute; a bare name is tried in tools/, then on PATH."""
    if "/" in program:
        return program
    candidate = tools_dir / program
    if candidate.is_file():
        if not os.access(candidate, os.X_OK):
            raise CommandNotFound(f"tools/{program} is not executable (chmod +x)")
        return str(candidate)
    if found := shutil.which(program, path=path):
        return found
    raise CommandNotFound(f"{program} was found neither in tools/ nor on PATH")


async def run_tool(
    spec: ToolSpec,
    values: Mapping[str, str],
    *,
    tools_dir: Path,
    env: Mapping[str, str],
) -> str:
    """Run the tool and return its output, or `error: <reason>`. Never raises."""
    argv = build_argv(spec.command, values)
    program = argv[0]
    process_env = {**os.environ, **env}
    try:
        executable = find_executable(program, tools_dir, process_env.get("PATH"))
    except CommandNotFound as err:
        return f"error: {err}"
    try:
        process = await asyncio.create_subprocess_exec(
            executable,
            *argv[1:],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=process_env,
            # Its own process group, so a timeout can kill every child too.
            start_new_session=True,
        )
    except OSError as err:
        return f"error: {program} could not be started: {err.strerror or err}"
    except ValueError as err:
        # A value the OS cannot put into argv or the environment.
        return f"error: {program} could not be started: {err}"
    outcome = await _communicate(process, spec.timeout)
    return outcome.result(program, spec.timeout)


@dataclass(slots=True)
class _Head:
    """The start of stdout, leading whitespace skipped; the rest is read and dropped."""

    text: str = ""
    read: int = 0
    full: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)

    async def consume(self, stream: asyncio.StreamReader) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := await stream.read(CHUNK):
            if self.full:
                continue
            self.read += len(chunk)
            self.text = (self.text + decoder.decode(chunk)).lstrip()
            if len(self.text) > OUTPUT_LIMIT or self.read > READ_LIMIT:
                self.full = True
                self.done.set()
        if not self.full:
            self.text += decoder.decode(b"", final=True)
        self.done.set()

    @property
    def output(self) -> str:
        return self.text.strip()[:OUTPUT_LIMIT].rstrip()


@dataclass(slots=True)
class _Tail:
    """The end of stderr."""

    data: bytearray = field(default_factory=bytearray)

    async def consume(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(CHUNK):
            self.data += chunk
            del self.data[:-STDERR_TAIL]

    @property
    def last_line(self) -> str:
        lines = self.data.decode("utf-8", errors="replace").strip().splitlines()
        return lines[-1].strip()[:LAST_LINE_LIMIT] if lines else ""


@dataclass(slots=True)
class _Outcome:
    stdout: _Head
    stderr: _Tail
    returncode: int | None
    timed_out: bool

    def result(self, program: str, timeout: float) -> str:
        if self.timed_out:
            reason = f"{program} timed out after {timeout:g} s"
        elif self.stdout.full or self.returncode == 0:
            # With enough output read the tool is stopped: its status says nothing.
            return self.stdout.output
        elif self.returncode is not None and self.returncode < 0:
            reason = f"{program} was killed by {_signal_name(-self.returncode)}"
        else:
            reason = f"{program} exited with status {self.returncode}"
        if last_line := self.stderr.last_line:
            return f"error: {reason}: {last_line}"
        return f"error: {reason}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


async def _communicate(process: asyncio.subprocess.Process, seconds: float) -> _Outcome:
    """Read until stdout ends and the process exits, enough is read, or time is up."""
    assert process.stdout is not None
    assert process.stderr is not None
    stdout, stderr = _Head(), _Tail()
    readers = [
        asyncio.create_task(stdout.consume(process.stdout)),
        asyncio.create_task(stderr.consume(process.stderr)),
    ]
    returncode: int | None = None
    timed_out = False
    try:
        async with asyncio.timeout(seconds):
            await stdout.done.wait()
            if not stdout.full:
                returncode = await process.wait()
    except TimeoutError:
        timed_out = True
    finally:
        # Whatever happened, nothing the tool started outlives the call.
        _kill_group(process.pid)
        await _settle(process, readers)
    return _Outcome(stdout, stderr, returncode, timed_out)


def _kill_group(pgid: int) -> None:
    # Gone already when the tool exited and left nothing behind.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _settle(
    process: asyncio.subprocess.Process, readers: list[asyncio.Task[None]]
) -> None:
    """Let the readers see the pipes close, so their transports are closed too."""
    try:
        async with asyncio.timeout(SETTLE_TIME):
            await asyncio.gather(*readers)
    except TimeoutError:
        # A process that left the group (setsid) still holds a pipe.
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    await process.wait()
