"""The desktop_assistant integration: a local voice assistant on llama.cpp."""

from homeassistant.const import CONF_API_KEY, CONF_URL, Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryError
from homeassistant.helpers import config_validation as cv
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.llm import async_register_api
from homeassistant.helpers.typing import ConfigType

from .agent.confirmation import Confirmations
from .chat import SCHEMA as CHAT_SCHEMA, async_setup_chat
from .const import (
    CONF_CONNECT_TIMEOUT,
    CONF_WAKE_ADDRESS,
    CONF_WAKE_MAC,
    CONF_WAKE_PORT,
    CONF_WAKE_WAIT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_WAKE_ADDRESS,
    DEFAULT_WAKE_PORT,
    DEFAULT_WAKE_WAIT,
    DOMAIN,
)
from .jobs import SCHEMA as JOBS_SCHEMA, async_end_interrupted, async_setup_jobs
from .llm import ToolFilesAPI
from .memory import SCHEMA as MEMORY_SCHEMA, async_setup_memory, async_time_nightly
from .panel import async_register_panel
from .record import SCHEMA as RECORD_SCHEMA, async_setup_record
from .runtime import (
    DATA_CONFIRMATIONS,
    DATA_TOOLS,
    DesktopAssistantConfigEntry,
    ServerRuntime,
)
from .server import async_setup_servers
from .server.client import InvalidAuth, LlamaServerClient, NotOpenAICompatible
from .server.credentials import without_credentials
from .server.health import ServerHealth
from .server.no_tool_calls import async_watch_tool_calls
from .server.wake import Waker
from .store import async_setup_store
from .tool_files import SCHEMA as TOOL_FILES_SCHEMA, async_setup_tool_files

CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)
# Every feature's tables; the store runs their migrations in version order.
SCHEMAS = (RECORD_SCHEMA, MEMORY_SCHEMA, TOOL_FILES_SCHEMA, JOBS_SCHEMA, CHAT_SCHEMA)
PLATFORMS: list[Platform] = [
    Platform.AI_TASK,
    Platform.BINARY_SENSOR,
    Platform.CONVERSATION,
    Platform.SENSOR,
]


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Open the database, then set up each feature on it, in order.

    This is the one place that wires features together: each registers its
    own commands, actions and listeners.
    """
    store = await async_setup_store(hass, SCHEMAS)
    await async_setup_jobs(hass, store)
    record = async_setup_record(hass, store)
    await async_setup_memory(hass)
    if not store.available:

        async def opened() -> None:
            # Entries reload so that memory's sensor and schedule exist.
            record.async_start()
            await async_end_interrupted(store)
            await async_setup_memory(hass)
            for entry in hass.config_entries.async_loaded_entries(DOMAIN):
                hass.config_entries.async_schedule_reload(entry.entry_id)

        store.async_reopen_later(opened)
    hass.data[DATA_CONFIRMATIONS] = Confirmations()
    await async_setup_tool_files(hass, store)
    async_setup_servers(hass)
    async_register_api(hass, ToolFilesAPI(hass))
    await async_register_panel(hass)
    await async_setup_chat(hass, store)
    return True


async def async_setup_entry(
    hass: HomeAssistant, entry: DesktopAssistantConfigEntry
) -> bool:
    """Check the entry's llama-server once and set up its agents.

    A server that is down or still loading is a normal state: the agents
    exist, fallbacks answer for it, and its health check keeps trying. A
    refused key asks for a new one; a server that is not llama-server fails.
    """
    if (title := without_credentials(entry.title)) != entry.title:
        hass.config_entries.async_update_entry(entry, title=title)
    options = entry.options
    client = LlamaServerClient(
        async_get_clientsession(hass),
        entry.data[CONF_URL],
        entry.data.get(CONF_API_KEY),
        float(options.get(CONF_CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT)),
    )
    health = ServerHealth(hass, client)
    entry.async_on_unload(health.async_stop)
    error = await health.async_check()
    if isinstance(error, InvalidAuth):
        raise ConfigEntryAuthFailed(
            translation_domain=DOMAIN, translation_key="setup_invalid_auth"
        ) from error
    if isinstance(error, NotOpenAICompatible):
        raise ConfigEntryError(
            translation_domain=DOMAIN,
            translation_key="setup_not_openai_compatible",
            translation_placeholders={"error": health.last_error or error.kind},
        ) from error
    entry.runtime_data = ServerRuntime(client, health, _waker(hass, entry))
    entry.async_on_unload(async_watch_tool_calls(hass, entry))
    if api_key := entry.data.get(CONF_API_KEY):
        # A tool that prints the key (read from HA's storage) shows `***`.
        entry.async_on_unload(hass.data[DATA_TOOLS].add_secret(api_key))
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    async_time_nightly(hass, entry)
    entry.async_on_unload(entry.add_update_listener(_async_reload_on_update))
    return True


def _waker(hass: HomeAssistant, entry: DesktopAssistantConfigEntry) -> Waker | None:
    """The entry's Wake-on-LAN, when its options name a MAC."""
    if not (mac := (entry.options.get(CONF_WAKE_MAC) or "").strip()):
        return None
    return Waker(
        hass,
        mac,
        entry.options.get(CONF_WAKE_ADDRESS) or DEFAULT_WAKE_ADDRESS,
        int(entry.options.get(CONF_WAKE_PORT, DEFAULT_WAKE_PORT)),
        float(entry.options.get(CONF_WAKE_WAIT, DEFAULT_WAKE_WAIT)),
    )


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
