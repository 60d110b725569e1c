"""The Repairs issue of a nightly pass that keeps failing.

Raised after FAILED_RUNS_ISSUE failed runs in a row (the jobs registry
counts them from its runs), removed by the first run that does not fail.
"""

from typing import Final

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir

from ...const import DOMAIN, PANEL_URL_PATH
from ...jobs import Outcome

FAILED_RUNS_ISSUE: Final = 3
ISSUE_FAILING: Final = "nightly_failing"


@callback
def async_report_failing(hass: HomeAssistant, failed_runs: int, last: Outcome) -> None:
    """Raise the issue when runs keep failing; remove it when one did not."""
    if failed_runs < FAILED_RUNS_ISSUE:
        if not failed_runs:
            ir.async_delete_issue(hass, DOMAIN, ISSUE_FAILING)
        return
    ir.async_create_issue(
        hass,
        DOMAIN,
        ISSUE_FAILING,
        # The panel's Nightly page lists the runs and why each failed.
        learn_more_url=f"/{PANEL_URL_PATH}/nightly",
        is_fixable=False,
        severity=ir.IssueSeverity.WARNING,
        translation_key=ISSUE_FAILING,
        translation_placeholders={
            "runs": str(failed_runs),
            "outcome": last.detail or last.kind,
        },
    )
