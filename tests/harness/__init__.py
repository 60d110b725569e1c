"""Stand-ins and helpers shared by the tests, the benchmarks and evaluation/."""

# Before anything of the harness imports Home Assistant's test helpers.
from tests.harness import ha_adapter  # noqa: F401
