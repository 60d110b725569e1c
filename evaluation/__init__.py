"""Checks of a household's own model through the agent."""

# Before anything imports Home Assistant's test helpers (run as programs).
from tests.harness import ha_adapter  # noqa: F401
