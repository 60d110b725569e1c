"""What Home Assistant reports as deprecated or incorrect usage by this integration.

Every test runs inside a `DeprecatedUsage` (the shared fixtures'
`no_deprecated_usage`), which fails it on such a report. Home Assistant
reports in its log: `report_usage`'s "Detected that custom integration
'desktop_assistant' ...", the deprecation helpers' "The deprecated constant
X was used from desktop_assistant", and "This will stop working in ..." of
code that no integration owns (the harness's own). Python warnings of
deprecation raised from the integration's files count too. Watches nest:
the innermost one running takes what is reported (a test of the watch
itself triggers a report on purpose inside one).
"""

import logging
from pathlib import Path
import re
from types import TracebackType
from typing import ClassVar, Self
import warnings

from custom_components.desktop_assistant.const import DOMAIN

INTEGRATION = Path(__file__).parents[2] / "custom_components" / DOMAIN
REPORTED = re.compile(
    rf"custom integration '{DOMAIN}'"
    rf"|The deprecated .* was \w+ from {DOMAIN}\b"
    # Reported with no integration to blame: the harness's code.
    r"|^Detected code that .* will stop working in"
)
DEPRECATIONS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


class DeprecatedUsage(logging.Handler):
    """Collects the reports while it runs; `check` fails if there were any."""

    _running: ClassVar[list["DeprecatedUsage"]] = []

    def __init__(self) -> None:
        """Nothing collected yet."""
        super().__init__(logging.WARNING)
        self.reports: list[str] = []
        self._warnings = warnings.catch_warnings(record=True)
        self._caught: list[warnings.WarningMessage] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep a report, if this is the innermost watch."""
        message = record.getMessage()
        if self._running[-1] is self and REPORTED.search(message):
            self.reports.append(message)

    def __enter__(self) -> Self:
        """Start watching the log and the warnings."""
        self._running.append(self)
        logging.getLogger().addHandler(self)
        self._caught = self._warnings.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop watching; warnings not of this integration go on to pytest."""
        self._warnings.__exit__(kind, error, traceback)
        logging.getLogger().removeHandler(self)
        self._running.remove(self)
        for caught in self._caught:
            ours = Path(caught.filename).is_relative_to(INTEGRATION)
            if ours and issubclass(caught.category, DEPRECATIONS):
                self.reports.append(
                    f"{caught.filename}:{caught.lineno}: {caught.message}"
                )
            else:
                warnings.warn_explicit(
                    caught.message, caught.category, caught.filename, caught.lineno
                )

    def check(self) -> None:
        """Fail when Home Assistant reported a deprecated or incorrect usage."""
        assert not self.reports, (
            "Home Assistant reported deprecated or incorrect usage:\n"
            + "\n".join(self.reports)
        )
