"""The one clock of every duration: plain Python, so `tools/` uses it too."""

import time


def monotonic_seconds() -> float:
    """Seconds of the system's monotonic clock, read through `clock_gettime`.

    A duration takes its start and end from one clock that is never set,
    even where `time.monotonic` is replaced (freezegun in tests).
    """
    return time.clock_gettime(time.CLOCK_MONOTONIC)
