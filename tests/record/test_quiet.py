"""Conversations go quiet after a while without activity; listeners hear it."""

from datetime import datetime, timedelta

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant, callback
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)

from custom_components.desktop_assistant.const import CONF_QUIET_MINUTES, DOMAIN
from custom_components.desktop_assistant.record import Record, async_listen_quiet

from .conftest import seed, stored


async def tick(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory, to: datetime
) -> None:
    """Let the clock reach `to` and the minute's quiet check run."""
    freezer.move_to(to)
    async_fire_time_changed(hass, to)
    await hass.async_block_till_done(wait_background_tasks=True)


@pytest.mark.freeze_time("2026-11-20 20:00:00+00:00")  # noon in the tests' zone
async def test_quiet_after_the_quiet_time_and_active_again(
    hass: HomeAssistant, record: Record, freezer: FrozenDateTimeFactory
) -> None:
    heard: list[str] = []

    @callback
    def went_quiet(conversation_id: str) -> None:
        heard.append(conversation_id)

    unsubscribe = async_listen_quiet(hass, went_quiet)
    short = MockConfigEntry(domain=DOMAIN, options={CONF_QUIET_MINUTES: 5})
    short.add_to_hass(hass)
    now = dt_util.utcnow()

    def minutes_ago(minutes: float) -> float:
        return (now - timedelta(minutes=minutes)).timestamp()

    await seed(hass, "old", minutes_ago(28), "the tapir")  # default: 30 minutes
    await seed(
        hass, "short", minutes_ago(6), "the ibis", config_entry_id=short.entry_id
    )
    await seed(
        hass, "fresh", minutes_ago(1), "the heron", config_entry_id=short.entry_id
    )

    await tick(hass, freezer, now + timedelta(minutes=0, seconds=61))
    assert heard == ["short"]
    await tick(hass, freezer, now + timedelta(minutes=2, seconds=2))
    assert heard == ["short", "old"]
    assert (await stored(hass, "old"))["status"] == "quiet"
    assert (await stored(hass, "fresh"))["status"] == "active"

    # A new turn makes it active; it goes quiet again later, heard again.
    await seed(hass, "old", dt_util.utcnow().timestamp(), "the tapir again")
    assert (await stored(hass, "old"))["status"] == "active"
    await tick(hass, freezer, now + timedelta(minutes=40))
    assert sorted(heard) == ["fresh", "old", "old", "short"]

    unsubscribe()
    await seed(hass, "later", minutes_ago(100), "the stork")
    await tick(hass, freezer, now + timedelta(minutes=41, seconds=3))
    assert len(heard) == 4
    assert (await stored(hass, "later"))["status"] == "quiet"
