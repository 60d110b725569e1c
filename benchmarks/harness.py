"""A real Home Assistant in the benchmark's process, as the test harness builds it."""

from collections.abc import AsyncIterator
import contextlib
import statistics
import tempfile

from homeassistant import loader
from homeassistant.core import HomeAssistant
from homeassistant.setup import async_setup_component
from pytest_homeassistant_custom_component.common import async_test_home_assistant

from tests.ports import free_port


@contextlib.asynccontextmanager
async def running_home_assistant() -> AsyncIterator[HomeAssistant]:
    """Home Assistant with its core, its web server and this repo's integrations."""
    with tempfile.TemporaryDirectory() as config_dir:
        async with async_test_home_assistant(config_dir=config_dir) as hass:
            # The harness hides custom integrations unless told otherwise.
            hass.data.pop(loader.DATA_CUSTOM_COMPONENTS)
            assert await async_setup_component(hass, "homeassistant", {})
            # HA's web server is not measured; keep it off the usual port.
            assert await async_setup_component(
                hass,
                "http",
                {"http": {"server_host": "127.0.0.1", "server_port": free_port()}},
            )
            yield hass
            await hass.async_stop(force=True)


def median_p95(values: list[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank) of the values."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95
