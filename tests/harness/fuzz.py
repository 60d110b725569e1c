"""Hypothesis profiles for the fuzz tests: `ci` (500 examples, the default) and
`nightly` (10,000), chosen with HYPOTHESIS_PROFILE=nightly.

A fuzz test module sets `pytestmark = FUZZ_TIMEOUT`: a nightly run takes
longer than the suite's per-test limit.
"""

import os

from hypothesis import HealthCheck, settings
import pytest

PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or "ci"
for name, examples in (("ci", 500), ("nightly", 10_000)):
    settings.register_profile(
        name,
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
settings.load_profile(PROFILE)

FUZZ_TIMEOUT = pytest.mark.timeout(3600 if PROFILE == "nightly" else 300)
