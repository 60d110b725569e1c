"""Stand-ins and helpers shared by the tests, the benchmarks and evaluation/."""
