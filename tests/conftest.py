"""Fixtures shared by all tests."""

from pathlib import Path

import pytest


@pytest.fixture
def hass_config_dir(tmp_path: Path) -> str:
    """Give each test's Home Assistant an empty config folder of its own.

    The test plugin's default folder (and its copy, `hass_tmp_config_dir`) has
    a `custom_components` package that would shadow this repository's.
    """
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    return str(config_dir)
