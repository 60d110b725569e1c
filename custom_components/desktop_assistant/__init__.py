"""The desktop_assistant integration: a local voice assistant on llama.cpp."""

from homeassistant.const import CONF_API_KEY, CONF_URL, Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import (
    ConfigEntryAuthFailed,
    ConfigEntryError,
    ConfigEntryNotReady,
)
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.llm import async_register_api
from homeassistant.helpers.typing import ConfigType

from .agent.confirmation import Confirmations
from .const import DOMAIN
from .llm import ToolFilesAPI
from .memory import SCHEMA as MEMORY_SCHEMA, async_schedule_nightly, async_setup_memory
from .panel import async_register_panel
from .record import SCHEMA as RECORD_SCHEMA, async_setup_record
from .runtime import DATA_CONFIRMATIONS, DATA_TOOLS, DesktopAssistantConfigEntry
from .server.client import (
    CannotConnect,
    InvalidAuth,
    LlamaServerClient,
    LlamaServerError,
    ServerTimeout,
)
from .server.credentials import without_credentials
from .services import async_setup_services
from .store import async_setup_store
from .tool_files import async_setup_tools

CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
# Every feature's tables; the store runs their migrations in version order.
SCHEMAS = (RECORD_SCHEMA, MEMORY_SCHEMA)
PLATFORMS: list[Platform] = [Platform.AI_TASK, Platform.CONVERSATION, Platform.SENSOR]


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Open the database; load the config folder's tools as Assist tools.

    The tools also become intents and the run_tool action.
    """
    store = await async_setup_store(hass, SCHEMAS)
    async_setup_record(hass, store)
    await async_setup_memory(hass)
    hass.data[DATA_CONFIRMATIONS] = Confirmations()
    await async_setup_tools(hass)
    async_setup_services(hass)
    async_register_api(hass, ToolFilesAPI(hass))
    await async_register_panel(hass)
    return True


async def async_setup_entry(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> bool:
    """Connect to the entry's llama-server and set up its agents."""
    if (title := without_credentials(entry.title)) != entry.title:
        hass.config_entries.async_update_entry(entry, title=title)
    client = LlamaServerClient(
        async_get_clientsession(hass),
        entry.data[CONF_URL],
        entry.data.get(CONF_API_KEY),
    )
    try:
        await client.async_list_models()
    except InvalidAuth as err:
        raise ConfigEntryAuthFailed(
            translation_domain=DOMAIN, translation_key="setup_invalid_auth"
        ) from err
    except (CannotConnect, ServerTimeout) as err:
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN,
            translation_key="setup_cannot_connect",
            translation_placeholders={
                "error": without_credentials(str(err) or err.kind)
            },
        ) from err
    except LlamaServerError as err:
        raise ConfigEntryError(
            translation_domain=DOMAIN,
            translation_key="setup_not_openai_compatible",
            translation_placeholders={
                "error": without_credentials(str(err) or err.kind)
            },
        ) from err
    entry.runtime_data = client
    if api_key := entry.data.get(CONF_API_KEY):
        # A tool that prints the key (read from HA's storage) shows `***`.
        entry.async_on_unload(hass.data[DATA_TOOLS].add_secret(api_key))
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    async_schedule_nightly(hass, entry)
    entry.async_on_unload(entry.add_update_listener(_async_reload_on_update))
    return True


async def async_unload_entry(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> bool:
    """Unload the entry's agents."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def _async_reload_on_update(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> None:
    """Reload so that changed agents or options take effect without a restart."""
    await hass.config_entries.async_reload(entry.entry_id)
