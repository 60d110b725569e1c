"""Run a tool's command: argv without a shell, bounded output, no child left behind."""

import asyncio
import codecs
from collections.abc import Callable, Mapping, Sequence
import contextlib
from dataclasses import dataclass, field
import os
from pathlib import Path
import shutil
import signal
import sys

from .guard import refusal
from .reaper import MARK_NAME, kill_marked, new_mark
from .redaction import Redactor
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
# After the tool's processes are killed, how long its pipes may take to close.
SETTLE_TIME = 2.0
# How a script in tools/ without the executable bit is run, by its suffix.
INTERPRETERS = {".py": sys.executable, ".sh": "/bin/sh"}


class CommandNotFound(Exception):
    """command[0] is in neither tools/ nor PATH, or cannot be executed."""


def build_argv(command: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """Return argv with each `{name}` replaced by that argument's string value.

    One pass per element: a value is never split, re-scanned or joined with
    another element, so it stays part of exactly one argument.
    """
    return [PLACEHOLDER.sub(lambda match: values[match[1]], part) for part in command]


def find_executable(program: str, tools_dir: Path, path: str | None) -> list[str]:
    """Return what starts argv: a bare name is tried in tools/, then on PATH.

    A script in tools/ that lost its executable bit (copied through a file
    share or an editor) still runs when its kind says how: `.py` with the
    Python running this code, `.sh` with /bin/sh. Blocking: run it in a thread.
    """
    if "/" in program:
        return [program]
    candidate = tools_dir / program
    if candidate.is_file():
        if os.access(candidate, os.X_OK):
            return [str(candidate)]
        if interpreter := INTERPRETERS.get(candidate.suffix):
            return [interpreter, str(candidate)]
        raise CommandNotFound(f"tools/{program} is not executable (chmod +x)")
    if found := shutil.which(program, path=path):
        return [found]
    raise CommandNotFound(f"{program} was found neither in tools/ nor on PATH")


async def run_tool(
    spec: ToolSpec,
    values: Mapping[str, str],
    *,
    tools_dir: Path,
    env: Mapping[str, str],
    slots: asyncio.Semaphore | None = None,
    redactor: Redactor | None = None,
) -> str:
    """Run the tool and return its output, or `error: <reason>`. Never raises.

    `slots` bounds how many tools run at once; waiting for one counts in the
    tool's timeout. What the tool prints goes through `redactor` (by default
    one for the [env] values) before it is returned.
    """
    if (refused := refusal(spec.command)) is not None:
        # Loading refuses such a file; a spec made some other way runs nothing.
        return f"error: not run: command[{refused.index}] {refused.message}"
    argv = build_argv(spec.command, values)
    program = argv[0]
    redactor = redactor or Redactor(env.values())
    deadline = asyncio.get_running_loop().time() + spec.timeout
    if slots is not None:
        try:
            async with asyncio.timeout_at(deadline):
                await slots.acquire()
        except TimeoutError:
            return (
                f"error: {program} timed out after {spec.timeout:g} s waiting for "
                "other tools to finish"
            )
    try:
        return await _run(
            spec,
            argv,
            tools_dir=tools_dir,
            env=env,
            deadline=deadline,
            redactor=redactor,
        )
    finally:
        if slots is not None:
            slots.release()


async def _run(
    spec: ToolSpec,
    argv: list[str],
    *,
    tools_dir: Path,
    env: Mapping[str, str],
    deadline: float,
    redactor: Redactor,
) -> str:
    program = argv[0]
    mark = new_mark()
    process_env = {**os.environ, **env, MARK_NAME: mark}
    try:
        async with asyncio.timeout_at(deadline):
            start = await _in_thread(
                find_executable, program, tools_dir, process_env.get("PATH")
            )
    except CommandNotFound as err:
        return f"error: {err}"
    except TimeoutError:
        return f"error: {program} timed out after {spec.timeout:g} s"
    try:
        process = await asyncio.create_subprocess_exec(
            *start,
            *argv[1:],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=process_env,
            # Its own process group, so one signal kills most children too.
            start_new_session=True,
        )
    except OSError as err:
        return f"error: {program} could not be started: {err.strerror or err}"
    except ValueError as err:
        # A value the OS cannot put into argv or the environment.
        return f"error: {program} could not be started: {err}"
    outcome = await _communicate(process, deadline, mark, redactor)
    return outcome.result(program, spec.timeout, redactor)


@dataclass(slots=True)
class _Head:
    """The start of stdout, leading whitespace skipped; the rest is read and dropped."""

    # Read past OUTPUT_LIMIT by this much, so a secret across the cut is whole.
    margin: int
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
            if len(self.text) > OUTPUT_LIMIT + self.margin or self.read > READ_LIMIT:
                self.full = True
                self.done.set()
        if not self.full:
            self.text += decoder.decode(b"", final=True)
        self.done.set()

    def output(self, redactor: Redactor, complete: bool) -> str:
        """The text for the model; `complete` when all the tool wrote was read."""
        if complete and not self.full:
            text = redactor.redact(self.text)
        else:
            text = redactor.redact_head(self.text)
        return text.strip()[:OUTPUT_LIMIT].rstrip()


@dataclass(slots=True)
class _Tail:
    """The end of stderr."""

    # Kept beyond STDERR_TAIL, so a secret across the cut is whole.
    margin: int
    data: bytearray = field(default_factory=bytearray)
    cut: bool = False

    async def consume(self, stream: asyncio.StreamReader) -> None:
        keep = STDERR_TAIL + 4 * self.margin
        while chunk := await stream.read(CHUNK):
            self.data += chunk
            if len(self.data) > keep:
                self.cut = True
                del self.data[:-keep]

    def last_line(self, redactor: Redactor) -> str:
        text = self.data.decode("utf-8", errors="replace")
        text = redactor.redact_tail(text) if self.cut else redactor.redact(text)
        lines = text.strip().splitlines()
        return lines[-1].strip()[:LAST_LINE_LIMIT] if lines else ""


@dataclass(slots=True)
class _Outcome:
    stdout: _Head
    stderr: _Tail
    returncode: int | None
    timed_out: bool
    # Whether the pipes were read to their end (nothing left holding them).
    complete: bool

    def result(self, program: str, timeout: float, redactor: Redactor) -> str:
        if self.timed_out:
            reason = f"{program} timed out after {timeout:g} s"
        elif self.stdout.full or self.returncode == 0:
            # With enough output read the tool is stopped: its status says nothing.
            return self.stdout.output(redactor, self.complete)
        elif self.returncode is not None and self.returncode < 0:
            reason = f"{program} was killed by {_signal_name(-self.returncode)}"
        else:
            reason = f"{program} exited with status {self.returncode}"
        if last_line := self.stderr.last_line(redactor):
            return f"error: {reason}: {last_line}"
        return f"error: {reason}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


async def _communicate(
    process: asyncio.subprocess.Process,
    deadline: float,
    mark: str,
    redactor: Redactor,
) -> _Outcome:
    """Read until the tool exits, enough is read, or time is up; then clean up.

    The tool's exit ends the wait even when a child it left behind still
    holds its pipes: what the tool printed is its answer.
    """
    assert process.stdout is not None
    assert process.stderr is not None
    stdout, stderr = _Head(redactor.longest), _Tail(redactor.longest)
    readers = [
        asyncio.create_task(stdout.consume(process.stdout)),
        asyncio.create_task(stderr.consume(process.stderr)),
    ]
    exited = asyncio.ensure_future(process.wait())
    enough = asyncio.ensure_future(stdout.done.wait())
    returncode: int | None = None
    timed_out = False
    try:
        async with asyncio.timeout_at(deadline):
            await asyncio.wait((exited, enough), return_when=asyncio.FIRST_COMPLETED)
            if not stdout.full:
                returncode = await exited
    except TimeoutError:
        timed_out = True
    finally:
        # Whatever happened, nothing the tool started outlives the call; a
        # cancelled call still cleans up, in the background.
        cleanup = asyncio.ensure_future(_clean_up(process, mark, readers))
        for waiter in (exited, enough):
            waiter.cancel()
        await asyncio.gather(exited, enough, return_exceptions=True)
        complete = await asyncio.shield(cleanup)
    return _Outcome(stdout, stderr, returncode, timed_out, complete)


async def _clean_up(
    process: asyncio.subprocess.Process, mark: str, readers: list[asyncio.Task[None]]
) -> bool:
    """Kill the tool and all it started; return whether its pipes were read to the end."""
    _kill_group(process.pid)
    await _in_thread(kill_marked, mark, process.pid)
    complete = await _settle(readers)
    await process.wait()
    return complete


async def _in_thread[**P, R](
    func: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    """Run blocking work off the event loop; inline once the executor is shut down.

    That happens while Home Assistant stops: a tool still gets its answer and
    its children are still killed.
    """
    try:
        return await asyncio.to_thread(func, *args, **kwargs)
    except RuntimeError:
        return func(*args, **kwargs)


def _kill_group(pgid: int) -> None:
    # Gone already when the tool exited and left nothing behind.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _settle(readers: list[asyncio.Task[None]]) -> bool:
    """Let the readers see the pipes close; return whether they all did."""
    try:
        async with asyncio.timeout(SETTLE_TIME):
            await asyncio.gather(*readers)
    except TimeoutError:
        # A process we could not find or kill (see reaper) holds a pipe.
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        return False
    return True
