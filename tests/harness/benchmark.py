"""What the benchmarks share: their command line and their statistics in ms."""

import argparse

from tests.harness.home_assistant import median_p95


def command_line(doc: str, runs: int) -> argparse.ArgumentParser:
    """A benchmark's parser: its docstring's first line, `--runs` (`runs` by default)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=runs)
    return parser


def median_p95_ms(seconds: list[float]) -> tuple[float, float]:
    """Median and p95 of times in seconds, in milliseconds."""
    median, p95 = median_p95(seconds)
    return median * 1000, p95 * 1000
