"""The shared fixture that fails a test on Home Assistant's deprecation reports.

Each test here triggers a report on purpose inside a watch of its own (the
innermost watch takes it), and checks that the watch fails on it.
"""

import warnings

from homeassistant.core import HomeAssistant
from homeassistant.helpers import frame
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.deprecations import INTEGRATION, DeprecatedUsage


async def test_home_assistant_reporting_our_usage_fails_the_test(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    with DeprecatedUsage() as usage:
        # What Home Assistant calls when it finds a deprecated call of ours.
        frame.report_usage(
            "uses an old way on purpose",
            breaks_in_ha_version="2099.1.0",
            integration_domain=DOMAIN,
        )
    with pytest.raises(AssertionError, match="uses an old way on purpose"):
        usage.check()
    assert "This will stop working in Home Assistant 2099.1.0" in usage.reports[0]


def test_a_deprecation_warning_from_our_code_fails_the_test() -> None:
    with DeprecatedUsage() as usage:
        warnings.warn_explicit(
            "old_helper is deprecated",
            DeprecationWarning,
            str(INTEGRATION / "conversation.py"),
            42,
        )
    with pytest.raises(AssertionError, match=r"conversation\.py:42: old_helper"):
        usage.check()


async def test_reports_of_other_code_pass(
    hass: HomeAssistant, config_entry: MockConfigEntry
) -> None:
    assert await hass.config_entries.async_setup(config_entry.entry_id)
    with DeprecatedUsage() as usage:
        frame.report_usage(
            "uses an old way",
            breaks_in_ha_version="2099.1.0",
            integration_domain="conversation",
        )
        with pytest.warns(DeprecationWarning):
            warnings.warn("another library's old way", DeprecationWarning, stacklevel=1)
    usage.check()
