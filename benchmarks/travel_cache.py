"""What caching travel's place lookups saves on a repeated question.

`travel` (the example tool, run as the integration runs it: ToolRegistry in
a config folder of the example tools) against the TomTom stand-in, which
waits `--latency` ms before each answer as a far service does. Alternating:

- cold: the cache file removed first, so both places are looked up, then
  the route (three requests);
- cached: the places come from the cache, the route is asked again (routes
  are never cached: one request).

Run: scripts/bench travel_cache [--runs 30] [--latency 80]
"""

import asyncio
import json
from pathlib import Path
import shutil
import tempfile
import time

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from tests.harness.benchmark import command_line
from tests.harness.home_assistant import median_p95
from tests.harness.web_stand_ins import (
    TOMTOM_KEY,
    TomTom,
    serving,
    tomtom_geography,
    tomtom_poi,
)

EXAMPLES = (
    Path(__file__).resolve().parent.parent
    / "custom_components"
    / "desktop_assistant"
    / "examples"
    / "tools"
)
QUESTION = {"origin": "Utrecht", "destination": "Schiphol"}


def registry(root: Path, url: str) -> ToolRegistry:
    """The example tools in `root`, with TomTom at `url` and caches in `root`."""
    shutil.copytree(EXAMPLES, root / "tools")
    env = {
        "TOMTOM_API_KEY": TOMTOM_KEY,
        "TOMTOM_URL": url,
        "XDG_CACHE_HOME": str(root / "cache"),
        "TZ": "Europe/Rome",
    }
    (root / "config.toml").write_text(
        "[env]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in env.items())
    )
    folder = load_folder(root)
    assert not folder.problems, folder.problems
    return ToolRegistry(folder)


async def timed_answer(tools: ToolRegistry) -> float:
    """Seconds one travel question takes; its answer must be a route."""
    started = time.perf_counter()
    answer = await tools.async_run("travel", QUESTION)
    seconds = time.perf_counter() - started
    assert answer.startswith("From Utrecht to Amsterdam Airport Schiphol"), answer
    return seconds


async def main(runs: int, latency_ms: float) -> None:
    """Ask `runs` times each way, alternating; print the table."""
    tomtom = TomTom(delay=latency_ms / 1000)
    tomtom.places = {
        "utrecht": [tomtom_geography("Utrecht", 52.09083, 5.12222)],
        "schiphol": [
            tomtom_poi("Amsterdam Airport Schiphol", "Haarlemmermeer", 52.309, 4.763)
        ],
    }
    cold, cached, requests = [], [], {"cold": 0, "cached": 0}
    with tempfile.TemporaryDirectory() as work:
        async with serving(tomtom):
            root = Path(work) / "desktop_assistant"
            tools = registry(root, tomtom.url)
            cache = root / "cache"
            for _ in range(runs):
                shutil.rmtree(cache, ignore_errors=True)
                before = len(tomtom.requests)
                cold.append(await timed_answer(tools))
                requests["cold"] += len(tomtom.requests) - before
                before = len(tomtom.requests)
                cached.append(await timed_answer(tools))
                requests["cached"] += len(tomtom.requests) - before
    cold_med, cold_p95 = median_p95(cold)
    cached_med, cached_p95 = median_p95(cached)
    print(
        f"travel Utrecht -> Schiphol, {runs} runs each way, alternating; "
        f"TomTom answers after {latency_ms:g} ms"
    )
    print(f"{'':<28} {'median ms':>10} {'p95 ms':>10} {'requests':>9}")
    for name, median, p95 in (
        ("cold (places looked up)", cold_med, cold_p95),
        ("cached (route only)", cached_med, cached_p95),
    ):
        key = name.split()[0]
        print(
            f"{name:<28} {median * 1000:>10.1f} {p95 * 1000:>10.1f} "
            f"{requests[key] / runs:>9.1f}"
        )
    print(f"cached / cold (median): {cached_med / cold_med:.2f}")


if __name__ == "__main__":
    parser = command_line(__doc__, runs=30)
    parser.add_argument("--latency", type=float, default=80)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.runs, arguments.latency))
