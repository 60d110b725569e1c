"""The two agents versus_core compares, in one Home Assistant: core's llama_cpp and ours."""

from pathlib import Path
import shutil

from homeassistant.const import CONF_LLM_HASS_API, CONF_MODEL, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.const import (
    CONF_MAX_TOKENS,
    CONF_TEMPERATURE,
    DEFAULT_AGENT_OPTIONS,
    DOMAIN,
)
from tests.harness.agent_entry import async_add_agent, async_set_up_agent_entry
from tests.harness.benchmark import EXAMPLES
from tests.harness.llama_server import MODEL_ID

CORE = "llama_cpp"


AGENTS = ("core", "ours")


# Both agents write at most this many tokens per answer, at temperature 0.
MAX_TOKENS = 16


# The tool call the proxy puts in place of the tool turn's first answer.
TOOL_CALL = (f"{DOMAIN}__now", "{}")


async def add_core_agent(
    hass: HomeAssistant, url: str, api: list[str], max_tokens: int
) -> str:
    """Set up HA's llama_cpp agent as its config flow would; return its entity id.

    The flow stores `streaming: true` for a server that streams, as
    llama-server does.
    """
    entry = MockConfigEntry(
        domain=CORE,
        title=url,
        data={"base_url": url, "streaming": True},
        subentries_data=[
            {
                "subentry_type": "conversation",
                "title": MODEL_ID,
                "data": {
                    "recommended": False,
                    CONF_LLM_HASS_API: api,
                    CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
                    "chat_model": MODEL_ID,
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                    "top_p": 1.0,
                },
                "unique_id": None,
            }
        ],
    )
    return await async_set_up_agent_entry(hass, entry)


async def add_agents(
    hass: HomeAssistant, url: str, api: list[str], max_tokens: int = MAX_TOKENS
) -> dict[str, str]:
    """Both agents for the server at `url`, offering `api`; name -> entity id."""
    _, ours = await async_add_agent(
        hass,
        url,
        DEFAULT_AGENT_OPTIONS
        | {
            CONF_MODEL: MODEL_ID,
            CONF_LLM_HASS_API: api,
            CONF_TEMPERATURE: 0.0,
            CONF_MAX_TOKENS: max_tokens,
        },
    )
    return {"core": await add_core_agent(hass, url, api, max_tokens), "ours": ours}


async def copy_example_tools(hass: HomeAssistant) -> None:
    """Put examples/tools/ into the config folder, before the integration loads."""
    await hass.async_add_executor_job(
        shutil.copytree, EXAMPLES, Path(hass.config.path(DOMAIN, "tools"))
    )
