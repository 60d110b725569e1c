"""Benchmarks: scripts that print tables of medians, p95s and ratios."""

# Before anything imports Home Assistant's test helpers (run as programs).
from tests.harness import ha_adapter  # noqa: F401
