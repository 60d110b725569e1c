"""What the agent itself says, read from the translations' `exceptions`.

Fault sentences and the announcement said when a tool file has none in the
person's language live in strings.json (`exceptions`) and its translations,
so a new language is a translation file, not code. `async_say` adds what the
agent says of its own to the chat log.
"""

from collections.abc import AsyncGenerator

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.translation import async_get_translations

from ..const import DOMAIN
from ..text import language_code

# Said if a key were missing from every translation, so the agent never fails
# for want of a sentence.
LAST_RESORT = "Sorry, something went wrong."


async def async_spoken_text(hass: HomeAssistant, key: str, language: str | None) -> str:
    """Return the text of the `exceptions` entry `key` in the person's language."""
    translations = await async_get_translations(
        hass, language_code(language), "exceptions", [DOMAIN]
    )
    return translations.get(f"component.{DOMAIN}.exceptions.{key}.message", LAST_RESORT)


async def async_fault_sentence(
    hass: HomeAssistant, kind: str, language: str | None
) -> str:
    """Return what the person hears for a kind of fault (LlamaServerError.kind)."""
    return await async_spoken_text(hass, f"fault_{kind}", language)


async def async_say(agent_id: str, chat_log: conversation.ChatLog, text: str) -> None:
    """Add the agent's own words to the chat log, streamed like the model's."""

    async def deltas() -> AsyncGenerator[conversation.AssistantContentDeltaDict]:
        yield {"role": "assistant"}
        yield {"content": text}

    async for _content in chat_log.async_add_delta_content_stream(agent_id, deltas()):
        pass
