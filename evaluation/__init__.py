"""Checks of a household's own model through the agent."""

import logging

# Without libturbojpeg (scripts/develop installs it, a household's machine
# may not) Home Assistant logs a traceback as soon as anything imports its
# camera component: it only slows camera snapshots, which the checks never
# take. Set before the imports below bring it in.
logging.getLogger("homeassistant.components.camera.img_util").setLevel(logging.CRITICAL)

# Before anything imports Home Assistant's test helpers (run as programs).
from tests.harness import ha_adapter  # noqa: E402, F401
