"""What the panel's markdown renderer and line diff cost on large texts, in Chromium.

The panel's own `dom.js`, served from `frontend/` on loopback and imported
by a headless Chromium, on the texts that froze it before (issue F14):

- markdown: `renderMarkdown` of a page of repeated `[[` (no link closes) and
  of a page of real links, against the baseline of a page of the same size
  with no marks at all;
- diff: `lineDiff` of a page's text against itself with one line changed,
  and against a wholly different text (past `MAX_EDITS`: shown as removed
  and added), against the baseline of the page against itself.

Every case grows with the text: time per size stays near linear (the old
renderer backtracked, 16 s at 100 kB; the old diff built a lines x lines
table, 6.9 s at 10,000 lines).

Run: scripts/bench panel_render [--runs 10]
"""

import contextlib
from functools import partial
import http.server
from pathlib import Path
import threading
from typing import Any

from tests.harness.benchmark import command_line
from tests.harness.browser import chromium
from tests.harness.home_assistant import median_p95
from tests.harness.ports import free_port

FRONTEND = (
    Path(__file__).resolve().parents[1]
    / "custom_components"
    / "desktop_assistant"
    / "frontend"
)
CASES = """
const [url, size, runs, done] = arguments;
import(url).then((dom) => {
  const lines = Array.from({ length: size }, (_, i) => `- 2026-11-${i % 28}: note ${i}`);
  const text = lines.join("\\n");
  const changed = [...lines.slice(0, size >> 1), "- a new line", ...lines.slice((size >> 1) + 1)].join("\\n");
  const other = lines.map((line) => line + "!").join("\\n");
  const brackets = "[[".repeat(text.length >> 1);
  const links = "[[Sara]] and [[Anouk|her]] ".repeat(text.length / 27);
  const plain = "a".repeat(text.length);
  const time = (work) => {
    const found = [];
    for (let run = 0; run < runs; run++) {
      const started = performance.now();
      work();
      found.push(performance.now() - started);
    }
    return found;
  };
  const label = (name, shown) => shown;
  done({
    "markdown [[ x": time(() => dom.renderMarkdown(brackets, label)),
    "markdown links": time(() => dom.renderMarkdown(links, label)),
    "markdown baseline": time(() => dom.renderMarkdown(plain, label)),
    "diff one line": time(() => dom.lineDiff(text, changed)),
    "diff all lines": time(() => dom.lineDiff(text, other)),
    "diff baseline": time(() => dom.lineDiff(text, text)),
    kilobytes: [text.length / 1000],
  });
}, (error) => done({ error: String(error) }));
"""
SIZES = (1_000, 10_000, 20_000)


ORDER = (
    "markdown baseline",
    "markdown [[ x",
    "markdown links",
    "diff baseline",
    "diff one line",
    "diff all lines",
)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files; logs nothing (the table is the output)."""

    def log_message(self, format: str, *args: Any) -> None:
        """Say nothing per request."""


@contextlib.contextmanager
def serve(folder: Path) -> Any:
    """The frontend's modules over HTTP on loopback, as Home Assistant serves them."""
    handler = partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(10)


def main() -> None:
    """Print a row per size and case: median and p95, ratio to its baseline."""
    parser = command_line(__doc__, runs=10)
    args = parser.parse_args()
    with serve(FRONTEND) as base, chromium() as driver:
        driver.get(f"{base}/")
        driver.set_script_timeout(600)
        print(
            f"{'lines':>6} {'kB':>6} {'case':<18} {'median ms':>10} {'p95 ms':>8} "
            f"{'x baseline':>10}"
        )
        for size in SIZES:
            found = driver.execute_async_script(
                CASES, f"{base}/dom.js", size, args.runs
            )
            if "error" in found:
                raise SystemExit(found["error"])
            kilobytes = found["kilobytes"][0]
            stats = {case: median_p95(found[case]) for case in ORDER}
            for case, (median, p95) in stats.items():
                # The timer's grain is 0.1 ms: a baseline below it counts as that.
                baseline = max(stats[f"{case.split()[0]} baseline"][0], 0.1)
                print(
                    f"{size:>6} {kilobytes:>6.0f} {case:<18} {median:>10.2f} "
                    f"{p95:>8.2f} {median / baseline:>10.1f}"
                )


if __name__ == "__main__":
    main()
