"""The Assist API as a household's agent gets it, for the narrowing's test and the eval.

Home Assistant's intents and tools, and a satellite with timers, so that
its timer intents are offered too.
"""

from homeassistant.components.intent import async_register_timer_handler
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm
from homeassistant.setup import async_setup_component

from custom_components.desktop_assistant.const import DOMAIN

# The satellite questions are asked on: it has timers.
SATELLITE = "kitchen-satellite"


async def async_set_up_assist(hass: HomeAssistant) -> None:
    """Home Assistant's intents and tools, and the satellite's timers."""
    assert await async_setup_component(hass, "intent", {})
    assert await async_setup_component(hass, "llm", {})
    async_register_timer_handler(hass, SATELLITE, lambda *_: None)


async def async_assist_api(hass: HomeAssistant, language: str) -> llm.APIInstance:
    """The Assist API's tools for a question on the satellite."""
    return await llm.async_get_api(
        hass,
        llm.LLM_API_ASSIST,
        llm.LLMContext(
            platform=DOMAIN,
            context=Context(),
            language=language,
            assistant="conversation",
            device_id=SATELLITE,
        ),
    )


def short(name: str) -> str:
    """A tool's name without its API's prefix: `intent__HassTurnOn` is HassTurnOn."""
    return name.rsplit("__", 1)[-1]
