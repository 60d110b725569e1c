"""An AI task entity on the stand-in's entry, for the tests of this folder."""

from pathlib import Path
from typing import Any

from homeassistant.config_entries import ConfigEntryState, ConfigSubentry
from homeassistant.const import CONF_MODEL
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    DEFAULT_AI_TASK_OPTIONS,
    DOMAIN,
    SUBENTRY_AI_TASK,
)
from tests.harness.llama_server import MODEL_ID


@pytest.fixture
def media(hass: HomeAssistant, tmp_path: Path) -> Path:
    """A media folder of Home Assistant's; listed before `task_entity`, set before it."""
    folder = tmp_path / "media"
    folder.mkdir()
    hass.config.media_dirs = {"local": str(folder)}
    return folder


@pytest.fixture
def task_options() -> dict[str, Any]:
    """The AI task subentry's options; tests override it with parametrize."""
    return DEFAULT_AI_TASK_OPTIONS | {CONF_MODEL: MODEL_ID}


@pytest.fixture
async def task_entity(
    hass: HomeAssistant, config_entry: MockConfigEntry, task_options: dict[str, Any]
) -> str:
    """The entity of an AI task subentry added to the stand-in's entry."""
    return await async_add_task(hass, config_entry, task_options)


async def async_add_task(
    hass: HomeAssistant, entry: MockConfigEntry, options: dict[str, Any]
) -> str:
    """Add an AI task subentry to the entry, set up or reloaded; its entity id.

    A loaded entry reloads by itself when a subentry is added.
    """
    hass.config_entries.async_add_subentry(
        entry,
        ConfigSubentry(
            data=options,
            subentry_type=SUBENTRY_AI_TASK,
            title="Tasks",
            unique_id=None,
        ),
    )
    await hass.async_block_till_done()
    if entry.state is ConfigEntryState.NOT_LOADED:
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
    (subentry_id,) = [
        s.subentry_id
        for s in entry.subentries.values()
        if s.subentry_type == SUBENTRY_AI_TASK
    ]
    entity_id = er.async_get(hass).async_get_entity_id("ai_task", DOMAIN, subentry_id)
    assert entity_id is not None
    return entity_id
