"""Fixtures shared by all tests."""

from pathlib import Path

import pytest

# The shared fixtures, defined once.
pytest_plugins = ["tests.harness.fixtures"]


@pytest.fixture
def hass_config_dir(tmp_path: Path) -> str:
    """Give each test's Home Assistant an empty config folder of its own.

    The test plugin's default folder (and its copy, `hass_tmp_config_dir`) has
    a `custom_components` package that would shadow this repository's.
    """
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    return str(config_dir)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly when tests of the real engines could not run."""
    missing = {
        str(report.longrepr[2]).removeprefix("Skipped: ")
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and "not installed" in report.longrepr[2]
    }
    for reason in sorted(missing):
        terminalreporter.write_sep(
            "!", "REAL-ENGINE TESTS SKIPPED", red=True, bold=True
        )
        terminalreporter.write_line(reason, red=True, bold=True)
