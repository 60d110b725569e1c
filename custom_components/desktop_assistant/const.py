"""Constants for the desktop_assistant integration."""

from typing import Any, Final

from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.helpers import llm

DOMAIN: Final = "desktop_assistant"
DEFAULT_NAME: Final = "llama-server"
# The Assistant panel's path: /desktop-assistant/<tab>/<item> opens an item.
PANEL_URL_PATH: Final = "desktop-assistant"

DEFAULT_URL: Final = "http://localhost:8181/v1"
# How long checking a server (GET /models) may take before it counts as a timeout.
CONNECT_TIMEOUT: Final = 10.0

# Servers that sleep (issue 20). An agent option: other llama-server entries
# (their entry ids) that answer, in order, when its own server is down.
CONF_FALLBACK_SERVERS: Final = "fallback_servers"
# An agent option: with its own server asleep (a MAC set, `wake_wait` > 0),
# wake it and wait for it even while a fallback is up.
CONF_PREFER_OWN_SERVER: Final = "prefer_own_server"
# Options of a llama-server entry (its Configure menu's Server page): seconds
# without response headers after which a question goes to the next server,
# and Wake-on-LAN of the machine it runs on.
CONF_CONNECT_TIMEOUT: Final = "connect_timeout"
CONF_WAKE_MAC: Final = "wake_mac"
CONF_WAKE_ADDRESS: Final = "wake_address"
CONF_WAKE_PORT: Final = "wake_port"
CONF_WAKE_WAIT: Final = "wake_wait"
# The nightly pass, its own server asleep and not woken in time: run on a
# fallback (True) or record the outcome `no_server` (False).
CONF_NIGHTLY_FALLBACK: Final = "nightly_fallback"
DEFAULT_CONNECT_TIMEOUT: Final = 3.0
DEFAULT_WAKE_ADDRESS: Final = "255.255.255.255"
DEFAULT_WAKE_PORT: Final = 9
DEFAULT_WAKE_WAIT: Final = 0
DEFAULT_NIGHTLY_FALLBACK: Final = True
# The nightly pass waits this long for its own server to wake.
NIGHTLY_WAKE_WAIT: Final = 600.0
# llama-server's GET /health, this often while it answers; while it does
# not, sooner (doubling from HEALTH_RETRY up to HEALTH_INTERVAL).
HEALTH_INTERVAL: Final = 30.0
HEALTH_RETRY: Final = 1.0
# An agent without a reachable server this long gets a Repairs issue.
NO_SERVER_ISSUE_AFTER: Final = 600.0
# docs/servers.md's section on templates that cannot call tools, where the
# `no_tool_calls` issue and the config flow's warning link.
TOOL_CALLS_DOC_URL: Final = (
    "https://github.com/desktop-assistant/desktop_assistant/blob/main/docs/"
    "servers.md#a-template-that-cannot-call-tools"
)
SERVICE_WAKE_SERVER: Final = "wake_server"

CONF_TOOL_ROUNDS: Final = "tool_rounds"
CONF_MAX_HISTORY: Final = "max_history"
CONF_TEMPERATURE: Final = "temperature"
CONF_MAX_TOKENS: Final = "max_tokens"
CONF_REQUEST_TIMEOUT: Final = "request_timeout"
CONF_TURN_TIMEOUT: Final = "turn_timeout"
CONF_CONFIRM_TIMEOUT: Final = "confirm_timeout"
# The household's languages; each question is answered in the one it is in.
CONF_LANGUAGES: Final = "languages"
# How the model calls tools: the template's own way (native), a reply held
# to a JSON schema (constrained), or constrained where the template cannot
# call tools (auto).
CONF_TOOL_CALLS: Final = "tool_calls"
TOOL_CALLS_NATIVE: Final = "native"
TOOL_CALLS_CONSTRAINED: Final = "constrained"
TOOL_CALLS_AUTO: Final = "auto"
TOOL_CALLS_MODES: Final = (TOOL_CALLS_AUTO, TOOL_CALLS_NATIVE, TOOL_CALLS_CONSTRAINED)

# Seconds a question before a changing tool waits for the person's yes.
DEFAULT_CONFIRM_TIMEOUT: Final = 60

# The conversation record (issue 10). An agent option: keep its conversations.
CONF_RECORD: Final = "record_conversations"
# Options of a llama-server entry, for its agents' conversations.
CONF_RETENTION_DAYS: Final = "retention_days"
CONF_QUIET_MINUTES: Final = "quiet_minutes"
# Memory's nightly pass (entry options): on or off, and its time of day in
# HA's time zone.
CONF_NIGHTLY: Final = "nightly"
CONF_NIGHTLY_TIME: Final = "nightly_time"
DEFAULT_NIGHTLY_TIME: Final = "03:00:00"
SERVICE_RUN_NIGHTLY: Final = "run_nightly"
DEFAULT_RETENTION_DAYS: Final = 90
# The longest time the record keeps (or a deletion reaches back): ten years.
MAX_RETENTION_DAYS: Final = 3650
DEFAULT_QUIET_MINUTES: Final = 30
# A new llama-server entry's options; readers of an option fall back to these.
DEFAULT_ENTRY_OPTIONS: Final[dict[str, Any]] = {
    CONF_RETENTION_DAYS: DEFAULT_RETENTION_DAYS,
    CONF_QUIET_MINUTES: DEFAULT_QUIET_MINUTES,
    CONF_NIGHTLY: True,
    CONF_NIGHTLY_TIME: DEFAULT_NIGHTLY_TIME,
}
SERVICE_DELETE_CONVERSATIONS: Final = "delete_conversations"
ATTR_OLDER_THAN_DAYS: Final = "older_than_days"
ATTR_CONVERSATION_ID: Final = "conversation_id"

# A new agent's options; CONF_MODEL is added from the server's model list.
DEFAULT_AGENT_OPTIONS: Final[dict[str, Any]] = {
    CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
    CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
    CONF_TOOL_ROUNDS: 3,
    CONF_TOOL_CALLS: TOOL_CALLS_AUTO,
    CONF_MAX_HISTORY: 20,
    CONF_TEMPERATURE: 0.7,
    CONF_MAX_TOKENS: 1024,
    CONF_REQUEST_TIMEOUT: 60,
    # A whole question, every round and tool included, whatever the server sends.
    CONF_TURN_TIMEOUT: 300,
    CONF_CONFIRM_TIMEOUT: DEFAULT_CONFIRM_TIMEOUT,
    CONF_RECORD: True,
    CONF_FALLBACK_SERVERS: [],
    CONF_PREFER_OWN_SERVER: False,
    # None set: every question is in the pipeline's language.
    CONF_LANGUAGES: [],
}

# AI Task entities (`ai_task.generate_data`), one per subentry of this type.
SUBENTRY_AI_TASK: Final = "ai_task_data"
# A new AI task's options; CONF_MODEL is added from the server's model list.
# Structured answers want a steady model, and a whole JSON document.
DEFAULT_AI_TASK_OPTIONS: Final[dict[str, Any]] = {
    CONF_TEMPERATURE: 0.2,
    CONF_MAX_TOKENS: 2048,
    CONF_REQUEST_TIMEOUT: 120,
    CONF_FALLBACK_SERVERS: [],
}

# Tools from the config folder (issue 4).
# The config folder, <HA config dir>/desktop_assistant/: config.toml,
# tools/<name>.toml and the database, assistant.db.
CONFIG_FOLDER: Final = "desktop_assistant"
# A tool's intent type is this prefix + its name in CamelCase.
INTENT_PREFIX: Final = "DesktopAssistant"
SERVICE_RUN_TOOL: Final = "run_tool"
SERVICE_RELOAD: Final = "reload"
SERVICE_INSTALL_EXAMPLES: Final = "install_examples"
ATTR_TOOL: Final = "tool"
ATTR_ARGUMENTS: Final = "arguments"

# Estimated tokens of a text: characters / 4, as budgets and the profile sensor count.
CHARS_PER_TOKEN: Final = 4
