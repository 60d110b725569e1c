"""What the tool runner adds to starting a process, and what a flood costs it.

For the same program, alternating, in one process and event loop:

- bare: `asyncio.create_subprocess_exec` of the program found on PATH, with
  stdout and stderr piped and read by `communicate()`;
- runner: `ToolRegistry.async_run` of a tool file running it: argument
  parsing, lookup in tools/ then PATH (in a thread), the slot among 8, the
  process group, the search for descendants by their mark (in a thread),
  output cut and secrets redacted.

The runner's cost is the difference (target: under 10 ms). Then a tool
printing 100 MB: wall time and peak Python memory (tracemalloc), read whole
by `communicate()` against the runner, which stops reading at 2000
characters and kills the tool.

Run: scripts/bench tool_spawn [--runs 300]
"""

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
import shutil
import sys
import tempfile
import time
import tracemalloc

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from custom_components.desktop_assistant.tools.reaper import kill_marked
from tests.harness.benchmark import command_line, median_p95_ms

FLOOD_MB = 100
FLOOD_PY = f"""#!{sys.executable}
import sys
chunk = b"x" * (1 << 20)
for _ in range({FLOOD_MB}):
    sys.stdout.buffer.write(chunk)
"""


def tool_folder(root: Path) -> ToolRegistry:
    """A config folder with `hi` (echo) and `flood` (100 MB on stdout)."""
    tools = root / "tools"
    tools.mkdir(parents=True)
    (tools / "hi.toml").write_text('description = "x"\ncommand = ["echo", "hi"]\n')
    (tools / "flood.toml").write_text(
        'description = "x"\ncommand = ["flood.py"]\ntimeout = 60\n'
    )
    (tools / "flood.py").write_text(FLOOD_PY)
    (tools / "flood.py").chmod(0o755)
    folder = load_folder(root)
    assert not folder.problems, folder.problems
    return ToolRegistry(folder)


async def bare(program: str, *args: str) -> bytes:
    """Start the program and read all it prints, as any caller would."""
    process = await asyncio.create_subprocess_exec(
        program,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, _ = await process.communicate()
    return stdout


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    """Seconds one call takes."""
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def measured(call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Seconds and peak Python memory (MB) of one call."""
    tracemalloc.start()
    try:
        seconds = await timed(call)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak / (1 << 20)


async def main(runs: int) -> None:
    """Measure spawn cost `runs` times each way, then the flood once each way."""
    echo = shutil.which("echo")
    assert echo is not None
    with tempfile.TemporaryDirectory() as root:
        registry = tool_folder(Path(root) / "desktop_assistant")
        assert await registry.async_run("hi") == "hi"
        assert await bare(echo, "hi") == b"hi\n"
        bare_times, runner_times, sweep_times = [], [], []
        for _ in range(runs):
            bare_times.append(await timed(lambda: bare(echo, "hi")))
            runner_times.append(await timed(lambda: registry.async_run("hi")))
            started = time.perf_counter()
            kill_marked("no-such-mark", 1)
            sweep_times.append(time.perf_counter() - started)

        flood = str(Path(root) / "desktop_assistant" / "tools" / "flood.py")
        bare_flood = await measured(lambda: bare(flood))
        runner_flood = await measured(lambda: registry.async_run("flood"))

    bare_med, bare_p95 = median_p95_ms(bare_times)
    run_med, run_p95 = median_p95_ms(runner_times)
    sweep_med, sweep_p95 = median_p95_ms(sweep_times)
    print(f"Tool spawn: `echo hi`, {runs} runs each way, alternating (ms)")
    print(f"{'':<44} {'median':>8} {'p95':>8}")
    print(
        f"{'bare asyncio.create_subprocess_exec':<44} {bare_med:>8.2f} {bare_p95:>8.2f}"
    )
    print(f"{'runner (ToolRegistry.async_run)':<44} {run_med:>8.2f} {run_p95:>8.2f}")
    added_med, added_p95 = run_med - bare_med, run_p95 - bare_p95
    print(f"{'added by the runner':<44} {added_med:>8.2f} {added_p95:>8.2f}")
    print(
        f"{'descendant search of all /proc (worst case)':<44} {sweep_med:>8.2f} {sweep_p95:>8.2f}"
    )
    verdict = "met" if added_med < 10 else "NOT met"
    print(f"target: under 10 ms added (median): {verdict}")
    print()
    print(f"A tool printing {FLOOD_MB} MB")
    print(f"{'':<36} {'time (s)':>9} {'peak Python memory (MB)':>24}")
    print(
        f"{'bare communicate() (reads it all)':<36} {bare_flood[0]:>9.3f} {bare_flood[1]:>24.1f}"
    )
    print(
        f"{'runner (stops at 2000 characters)':<36} {runner_flood[0]:>9.3f} {runner_flood[1]:>24.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main(command_line(__doc__, runs=300).parse_args().runs))
