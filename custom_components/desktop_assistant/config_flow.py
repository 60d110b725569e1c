"""Config flow: one llama-server per entry, conversation agents as subentries."""

from collections.abc import Mapping
import logging
from typing import Any

from homeassistant.config_entries import (
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryFlow,
    OptionsFlow,
    SubentryFlowResult,
)
from homeassistant.const import (
    CONF_LLM_HASS_API,
    CONF_MODEL,
    CONF_NAME,
    CONF_PROMPT,
    CONF_URL,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    BooleanSelector,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    TemplateSelector,
    TimeSelector,
)
import probatio as vol

from .agent.language import DETECTABLE_LANGUAGES
from .const import (
    CONF_CONFIRM_TIMEOUT,
    CONF_FALLBACK_SERVERS,
    CONF_LANGUAGES,
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_NIGHTLY,
    CONF_NIGHTLY_TIME,
    CONF_PREFER_OWN_SERVER,
    CONF_QUIET_MINUTES,
    CONF_RECORD,
    CONF_REQUEST_TIMEOUT,
    CONF_RETENTION_DAYS,
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    CONF_TOOL_ROUNDS,
    CONF_TURN_TIMEOUT,
    CONFIG_FOLDER,
    DEFAULT_AGENT_OPTIONS,
    DEFAULT_AI_TASK_OPTIONS,
    DEFAULT_ENTRY_OPTIONS,
    DEFAULT_NAME,
    DOMAIN,
    MAX_RETENTION_DAYS,
    SUBENTRY_AI_TASK,
    TOOL_CALLS_AUTO,
    TOOL_CALLS_DOC_URL,
    TOOL_CALLS_MODES,
)
from .llm import filter_invalid_llm_apis
from .server.check import (
    REAUTH_SCHEMA,
    SERVER_SCHEMA,
    async_check_server,
    server_data,
)
from .server.credentials import without_credentials
from .server.options import (
    ServerOptionsStep,
    async_models_for_form,
    checked_numbers,
    existing_fallbacks,
    fallback_selector,
    number_box,
)
from .server.url import abort_if_added, typed_server
from .text import model_name
from .tool_files import async_install_examples

_LOGGER = logging.getLogger(__name__)

AGENT_ONLY_OPTIONS = frozenset(
    {
        CONF_RECORD,
        CONF_PROMPT,
        CONF_LLM_HASS_API,
        CONF_TOOL_ROUNDS,
        CONF_TOOL_CALLS,
        CONF_MAX_HISTORY,
        CONF_TURN_TIMEOUT,
        CONF_CONFIRM_TIMEOUT,
        CONF_PREFER_OWN_SERVER,
        CONF_LANGUAGES,
    }
)
RECORD_OPTIONS_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_RETENTION_DAYS): number_box(0, MAX_RETENTION_DAYS, unit="d"),
        vol.Required(CONF_QUIET_MINUTES): number_box(1, 1440, unit="min"),
        vol.Required(CONF_NIGHTLY): BooleanSelector(),
        vol.Required(CONF_NIGHTLY_TIME): TimeSelector(),
    }
)
TOOL_CALLS_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_TOOL_CALLS, default=TOOL_CALLS_AUTO): SelectSelector(
            SelectSelectorConfig(
                options=list(TOOL_CALLS_MODES), translation_key=CONF_TOOL_CALLS
            )
        )
    }
)


def unique_name(name: str, taken: set[str]) -> str:
    """Return `name`, or `name 2`, `name 3`... when another entity has it."""
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name} {number}"
    return candidate


def default_agent_name(hass: HomeAssistant, model: str) -> str:
    """Return a new agent's name: its model file's stem, unique among ours."""
    taken = {
        subentry.title
        for entry in hass.config_entries.async_entries(DOMAIN)
        for subentry in entry.subentries.values()
    }
    return unique_name(model_name(model) or DEFAULT_NAME, taken)


class DesktopAssistantConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add a llama-server."""

    VERSION = 1

    # The server the user step checked: its URL, its key and its first model.
    _server: tuple[str, str | None, str]

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the server's URL and key, check it, add one agent.

        A server whose template cannot call tools says so first.
        """
        errors: dict[str, str] = {}
        if user_input is not None:
            url, api_key = typed_server(user_input)
            abort_if_added(self._async_current_entries(), url)
            checked = await async_check_server(self.hass, url, api_key)
            errors = checked.errors
            if not errors:
                model = checked.models[0] if checked.models else ""
                self._server = (url, api_key, model)
                if checked.tool_calls is False:
                    return await self.async_step_tool_calls()
                return self._async_add_server({})
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(SERVER_SCHEMA, user_input),
            errors=errors,
        )

    async def async_step_tool_calls(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """The template cannot call tools: say so, the fixes, and how the agent calls."""
        if user_input is not None:
            return self._async_add_server(
                {CONF_TOOL_CALLS: user_input[CONF_TOOL_CALLS]}
            )
        return self.async_show_form(
            step_id="tool_calls",
            data_schema=TOOL_CALLS_SCHEMA,
            description_placeholders={
                "model": model_name(self._server[2]) or "-",
                "docs": TOOL_CALLS_DOC_URL,
            },
        )

    def _async_add_server(self, agent_options: dict[str, Any]) -> ConfigFlowResult:
        """Add the checked server's entry, with one agent on its first model."""
        url, api_key, model = self._server
        return self.async_create_entry(
            title=without_credentials(url),
            data=server_data(url, api_key),
            subentries=[
                {
                    "subentry_type": "conversation",
                    "title": default_agent_name(self.hass, model),
                    "data": DEFAULT_AGENT_OPTIONS | {CONF_MODEL: model} | agent_options,
                    "unique_id": None,
                }
            ],
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the server's URL or key."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            url, api_key = typed_server(user_input)
            abort_if_added(self._async_current_entries(), url, keep=entry)
            errors = (await async_check_server(self.hass, url, api_key)).errors
            if not errors:
                return self._async_update_and_reload_once(
                    entry,
                    title=without_credentials(url),
                    data=server_data(url, api_key),
                )
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(
                SERVER_SCHEMA, user_input or entry.data
            ),
            errors=errors,
        )

    async def async_step_reauth(
        self, entry_data: Mapping[str, Any]
    ) -> ConfigFlowResult:
        """Start asking for a new key after the server refused the old one."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for a new key and check it."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            url = entry.data[CONF_URL]
            _, api_key = typed_server({**user_input, CONF_URL: url})
            errors = (await async_check_server(self.hass, url, api_key)).errors
            if not errors:
                return self._async_update_and_reload_once(
                    entry, data=server_data(url, api_key)
                )
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=REAUTH_SCHEMA,
            description_placeholders={
                CONF_URL: without_credentials(entry.data[CONF_URL])
            },
            errors=errors,
        )

    def _async_update_and_reload_once(
        self, entry: ConfigEntry, **changes: Any
    ) -> ConfigFlowResult:
        """Change the entry and end the flow; the entry reloads once.

        One way for the whole integration, as HA core's AI integrations do:
        a loaded entry has its update listener (`__init__.py`), which reloads
        it after any change, from this flow, the options or a subentry, so
        the flow only updates it. An entry that failed to set up (a refused
        key) has no listener, and the flow reloads it itself. Both at once
        would set it up twice, which HA reports as deprecated.
        """
        if entry.update_listeners:
            return self.async_update_and_abort(entry, **changes)
        return self.async_update_reload_and_abort(entry, **changes)

    @classmethod
    @callback
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Return the subentry types: conversation agents and AI tasks."""
        return {
            "conversation": ConversationFlowHandler,
            SUBENTRY_AI_TASK: AITaskFlowHandler,
        }

    @staticmethod
    @callback
    def async_get_options_flow(config_entry: ConfigEntry) -> OptionsFlow:
        """Return the flow behind the entry's Configure button."""
        return EntryOptionsFlow()


class EntryOptionsFlow(ServerOptionsStep, OptionsFlow):
    """How conversations are kept, and the example tools installed from the UI."""

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Offer the record's options or installing the example tools."""
        return self.async_show_menu(
            step_id="init", menu_options=["record", "server", "install_examples"]
        )

    async def async_step_record(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """How long conversations are kept, and when one goes quiet."""
        errors: dict[str, str] = {}
        if user_input is not None:
            user_input, errors = checked_numbers(RECORD_OPTIONS_SCHEMA, user_input)
            if not errors:
                return self.async_create_entry(
                    data=dict(self.config_entry.options) | user_input
                )
        return self.async_show_form(
            step_id="record",
            data_schema=self.add_suggested_values_to_schema(
                RECORD_OPTIONS_SCHEMA,
                DEFAULT_ENTRY_OPTIONS
                | dict(self.config_entry.options)
                | (user_input or {}),
            ),
            errors=errors,
        )

    async def async_step_install_examples(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Install the example tools, chosen in the menu, and say what was copied.

        Files already there are kept; the options stay as they are.
        """
        placeholders = {"folder": CONFIG_FOLDER}
        try:
            report = await async_install_examples(self.hass)
        except OSError as err:
            _LOGGER.warning("Cannot install the example tools: %s", err)
            return self.async_abort(
                reason="cannot_install_examples", description_placeholders=placeholders
            )
        if not report.installed:
            return self.async_abort(
                reason="examples_already_installed",
                description_placeholders=placeholders,
            )
        return self.async_abort(
            reason="examples_installed",
            description_placeholders=placeholders
            | {
                "installed": ", ".join(report.installed),
                "skipped": ", ".join(report.skipped) or "-",
            },
        )


class ModelSubentryFlow(ConfigSubentryFlow):
    """Add or change an entity of a server that uses one of its models."""

    # A new one's options (CONF_MODEL is added from the server's model list),
    # and the agent fields it does not have.
    defaults: dict[str, Any]
    hidden: frozenset[str] = frozenset()

    async def async_step_set_options(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Choose the name, the model and how it behaves."""
        entry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="entry_not_loaded")
        errors: dict[str, str] = {}
        if user_input is not None:
            user_input, errors = checked_numbers(
                self._schema(entry, "", []), user_input
            )
            if not errors:
                return self._async_save(entry, user_input)
        models = await async_models_for_form(entry)
        if isinstance(models, str):
            return self.async_abort(reason=models)
        name, options = self._suggested(entry, models)
        return self.async_show_form(
            step_id="set_options",
            data_schema=self.add_suggested_values_to_schema(
                self._schema(entry, name, models), options | (user_input or {})
            ),
            errors=errors,
        )

    def _schema(self, entry: ConfigEntry, name: str, models: list[str]) -> vol.Schema:
        """The form's fields, without those this kind of entity does not have."""
        fields = _agent_schema(self.hass, entry, name, models)
        return vol.Schema(
            {
                marker: selector
                for marker, selector in fields.items()
                if str(marker) not in self.hidden
            }
        )

    def _suggested(
        self, entry: ConfigEntry, models: list[str]
    ) -> tuple[str, dict[str, Any]]:
        """The name and options the form suggests: a new one's, or the subentry's.

        An API or a fallback server that went away (an MCP server removed, an
        entry deleted) is dropped: the form would refuse it.
        """
        if self.source == "user":
            model = models[0] if models else ""
            options = self.defaults | {CONF_MODEL: model}
            name = default_agent_name(self.hass, model)
        else:
            subentry = self._get_reconfigure_subentry()
            options = self.defaults | dict(subentry.data)
            name = subentry.title
        if CONF_LLM_HASS_API not in self.hidden:
            options[CONF_LLM_HASS_API] = filter_invalid_llm_apis(
                self.hass, options.get(CONF_LLM_HASS_API) or []
            )
        if CONF_FALLBACK_SERVERS not in self.hidden:
            options[CONF_FALLBACK_SERVERS] = existing_fallbacks(
                self.hass, entry, options.get(CONF_FALLBACK_SERVERS) or []
            )
        return name, options

    def _async_save(
        self, entry: ConfigEntry, user_input: dict[str, Any]
    ) -> SubentryFlowResult:
        """Add the entity, or change the one reconfigured; unnamed, it is named."""
        title = user_input.pop(CONF_NAME).strip() or default_agent_name(
            self.hass, user_input[CONF_MODEL]
        )
        if self.source == "user":
            return self.async_create_entry(title=title, data=user_input)
        return self.async_update_and_abort(
            entry, self._get_reconfigure_subentry(), title=title, data=user_input
        )

    async_step_user = async_step_set_options
    async_step_reconfigure = async_step_set_options


class ConversationFlowHandler(ModelSubentryFlow):
    """Add or change a conversation agent of a server."""

    defaults = DEFAULT_AGENT_OPTIONS


class AITaskFlowHandler(ModelSubentryFlow):
    """Add or change an AI task entity of a server: no conversations, no tools."""

    defaults = DEFAULT_AI_TASK_OPTIONS
    hidden = AGENT_ONLY_OPTIONS


def _agent_schema(
    hass: HomeAssistant, entry: ConfigEntry, name: str, models: list[str]
) -> dict[vol.Marker, Any]:
    """Return the fields of an agent: its name, then its options."""
    return {
        vol.Required(CONF_NAME, default=name): str,
        vol.Required(CONF_MODEL): SelectSelector(
            SelectSelectorConfig(
                options=[SelectOptionDict(label=m, value=m) for m in models],
                custom_value=True,
            )
        ),
        vol.Optional(CONF_PROMPT): TemplateSelector(),
        vol.Optional(CONF_LLM_HASS_API): SelectSelector(
            SelectSelectorConfig(
                options=[
                    SelectOptionDict(label=api.name, value=api.id)
                    for api in llm.async_get_apis(hass)
                ],
                multiple=True,
            )
        ),
        vol.Required(CONF_TOOL_ROUNDS): number_box(0, 10),
        vol.Required(CONF_TOOL_CALLS): SelectSelector(
            SelectSelectorConfig(
                options=list(TOOL_CALLS_MODES), translation_key=CONF_TOOL_CALLS
            )
        ),
        vol.Required(CONF_MAX_HISTORY): number_box(0, 200),
        vol.Required(CONF_TEMPERATURE): number_box(0, 2, 0.05),
        vol.Required(CONF_MAX_TOKENS): number_box(16, 32768),
        vol.Required(CONF_REQUEST_TIMEOUT): number_box(5, 600),
        vol.Required(CONF_TURN_TIMEOUT): number_box(10, 3600),
        vol.Required(CONF_CONFIRM_TIMEOUT): number_box(10, 600),
        vol.Required(CONF_RECORD): BooleanSelector(),
        vol.Optional(CONF_FALLBACK_SERVERS): fallback_selector(hass, entry),
        vol.Required(CONF_PREFER_OWN_SERVER): BooleanSelector(),
        vol.Optional(CONF_LANGUAGES): SelectSelector(
            SelectSelectorConfig(
                options=list(DETECTABLE_LANGUAGES), multiple=True, sort=True
            )
        ),
    }
