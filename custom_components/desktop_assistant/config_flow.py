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
    SubentryFlowResult,
)
from homeassistant.const import (
    CONF_API_KEY,
    CONF_LLM_HASS_API,
    CONF_MODEL,
    CONF_NAME,
    CONF_PROMPT,
    CONF_URL,
)
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import config_validation as cv, llm
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    TemplateSelector,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
import probatio as vol

from .client import LlamaServerClient, LlamaServerError
from .const import (
    CONF_MAX_HISTORY,
    CONF_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT,
    CONF_TEMPERATURE,
    CONF_TOOL_ROUNDS,
    CONF_TURN_TIMEOUT,
    DEFAULT_AGENT_OPTIONS,
    DEFAULT_NAME,
    DEFAULT_URL,
    DOMAIN,
)
from .llm import filter_invalid_llm_apis

_LOGGER = logging.getLogger(__name__)

# The form error for each kind of fault checking the server can end in
# (LlamaServerError.kind); any other failure is `unknown`.
FORM_ERRORS: dict[str, str] = {
    "cannot_connect": "cannot_connect",
    "timeout": "timeout_connect",
    "invalid_auth": "invalid_auth",
    "server_error": "not_openai_compatible",
}

SERVER_SCHEMA = vol.Schema(
    {
        vol.Required(CONF_URL, default=DEFAULT_URL): TextSelector(
            TextSelectorConfig(type=TextSelectorType.URL)
        ),
        vol.Optional(CONF_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        ),
    }
)
REAUTH_SCHEMA = vol.Schema(
    {
        vol.Optional(CONF_API_KEY): TextSelector(
            TextSelectorConfig(type=TextSelectorType.PASSWORD)
        )
    }
)


def _server_input(user_input: dict[str, Any]) -> tuple[str, str | None]:
    """Return the normalised URL (no trailing slash) and key (None when blank)."""
    url = user_input[CONF_URL].strip().rstrip("/")
    api_key = (user_input.get(CONF_API_KEY) or "").strip() or None
    return url, api_key


def _server_data(url: str, api_key: str | None) -> dict[str, str]:
    """Return entry data for a server; the key only when there is one."""
    return {CONF_URL: url} | ({CONF_API_KEY: api_key} if api_key else {})


async def _async_check_server(
    hass: HomeAssistant, url: str, api_key: str | None
) -> tuple[list[str], dict[str, str]]:
    """Return the server's models, or the form errors when checking it failed."""
    try:
        cv.url(url)
    except vol.Invalid:
        return [], {CONF_URL: "invalid_url"}
    client = LlamaServerClient(async_get_clientsession(hass), url, api_key)
    try:
        return await client.async_list_models(), {}
    except LlamaServerError as err:
        _LOGGER.debug("Checking %s failed: %r", url, err)
        return [], {"base": FORM_ERRORS.get(err.kind, "unknown")}
    except Exception:
        _LOGGER.exception("Unexpected error checking %s", url)
        return [], {"base": "unknown"}


class DesktopAssistantConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add a llama-server."""

    VERSION = 1

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the server's URL and key, check it, add one agent."""
        errors: dict[str, str] = {}
        if user_input is not None:
            url, api_key = _server_input(user_input)
            self._async_abort_entries_match({CONF_URL: url})
            models, errors = await _async_check_server(self.hass, url, api_key)
            if not errors:
                model = models[0] if models else ""
                return self.async_create_entry(
                    title=url,
                    data=_server_data(url, api_key),
                    subentries=[
                        {
                            "subentry_type": "conversation",
                            "title": model or DEFAULT_NAME,
                            "data": DEFAULT_AGENT_OPTIONS | {CONF_MODEL: model},
                            "unique_id": None,
                        }
                    ],
                )
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(SERVER_SCHEMA, user_input),
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the server's URL or key."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            url, api_key = _server_input(user_input)
            if url != entry.data[CONF_URL]:
                self._async_abort_entries_match({CONF_URL: url})
            _, errors = await _async_check_server(self.hass, url, api_key)
            if not errors:
                return self.async_update_reload_and_abort(
                    entry, title=url, data=_server_data(url, api_key)
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
            url, api_key = _server_input({**user_input, CONF_URL: entry.data[CONF_URL]})
            _, errors = await _async_check_server(self.hass, url, api_key)
            if not errors:
                return self.async_update_reload_and_abort(
                    entry, data=_server_data(url, api_key)
                )
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=REAUTH_SCHEMA,
            description_placeholders={CONF_URL: entry.data[CONF_URL]},
            errors=errors,
        )

    @classmethod
    @callback
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Return the subentry types: conversation agents."""
        return {"conversation": ConversationFlowHandler}


class ConversationFlowHandler(ConfigSubentryFlow):
    """Add or change a conversation agent of a server."""

    async def async_step_set_options(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Choose the model and how the agent behaves."""
        entry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="entry_not_loaded")
        is_new = self.source == "user"
        if user_input is not None:
            if is_new:
                title = user_input.pop(CONF_NAME)
                return self.async_create_entry(title=title, data=user_input)
            return self.async_update_and_abort(
                entry, self._get_reconfigure_subentry(), data=user_input
            )
        client: LlamaServerClient = entry.runtime_data
        try:
            models = await client.async_list_models()
        except LlamaServerError as err:
            _LOGGER.debug("Listing models of %s failed: %r", client.url, err)
            return self.async_abort(reason="cannot_connect")
        except Exception:
            _LOGGER.exception("Unexpected error listing models of %s", client.url)
            return self.async_abort(reason="unknown")
        options = (
            DEFAULT_AGENT_OPTIONS | {CONF_MODEL: models[0] if models else ""}
            if is_new
            else DEFAULT_AGENT_OPTIONS | dict(self._get_reconfigure_subentry().data)
        )
        # An API that went away (an MCP server removed) would fail the form.
        options[CONF_LLM_HASS_API] = filter_invalid_llm_apis(
            self.hass, options.get(CONF_LLM_HASS_API) or []
        )
        return self.async_show_form(
            step_id="set_options",
            data_schema=self.add_suggested_values_to_schema(
                vol.Schema(_agent_schema(self.hass, is_new, models)), options
            ),
        )

    async_step_user = async_step_set_options
    async_step_reconfigure = async_step_set_options


def _agent_schema(
    hass: HomeAssistant, is_new: bool, models: list[str]
) -> dict[vol.Marker, Any]:
    """Return the fields of an agent's options."""
    schema: dict[vol.Marker, Any] = {}
    if is_new:
        schema[
            vol.Required(CONF_NAME, default=models[0] if models else DEFAULT_NAME)
        ] = str

    def number(minimum: float, maximum: float, step: float = 1) -> NumberSelector:
        return NumberSelector(
            NumberSelectorConfig(
                min=minimum, max=maximum, step=step, mode=NumberSelectorMode.BOX
            )
        )

    return schema | {
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
        vol.Required(CONF_TOOL_ROUNDS): number(0, 10),
        vol.Required(CONF_MAX_HISTORY): number(0, 200),
        vol.Required(CONF_TEMPERATURE): number(0, 2, 0.05),
        vol.Required(CONF_MAX_TOKENS): number(16, 32768),
        vol.Required(CONF_REQUEST_TIMEOUT): number(5, 600),
        vol.Required(CONF_TURN_TIMEOUT): number(10, 3600),
    }
