"""The test harness made for the oldest supported Home Assistant, adapted to the newest.

pytest-homeassistant-custom-component 0.13.375 is generated from Home
Assistant 2026.10.4's own tests; no release of it follows 2026.11 yet. This
module adapts it by feature detection: each change applies only where the
installed Home Assistant differs from what the harness expects, so on the
oldest it changes nothing. pytest loads it before the harness's own plugin
(`-p` in pyproject.toml); `tests/harness/__init__.py` imports it, so that
benchmarks and evaluation started as programs get it too.
"""

# Home Assistant 2026.11 aliases httpx to httpx2 when it is imported, and
# refuses to once anything imported httpx (the harness imports respx first).
import homeassistant  # noqa: F401  # isort: skip
from homeassistant.components import logger

# 2026.11 moved it into the logger component's helpers; the harness's
# common.py imports it from the component.
if not hasattr(logger, "_clear_logger_overwrites"):
    from homeassistant.components.logger.helpers import _clear_logger_overwrites

    logger._clear_logger_overwrites = _clear_logger_overwrites
