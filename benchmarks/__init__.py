"""Benchmarks: scripts that print tables of medians, p95s and ratios."""
