"""Fixtures for tests of the database store."""

from ..integration.conftest import custom_integrations  # noqa: F401 (fixture)
