"""Constants for the desktop_assistant integration."""

from typing import Any, Final

from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.helpers import llm
from homeassistant.util.hass_dict import HassKey

from .tools import ToolRegistry

DOMAIN: Final = "desktop_assistant"
DEFAULT_NAME: Final = "llama-server"

DEFAULT_URL: Final = "http://localhost:8181/v1"
# How long checking a server (GET /models) may take before it counts as a timeout.
CONNECT_TIMEOUT: Final = 10.0

CONF_TOOL_ROUNDS: Final = "tool_rounds"
CONF_MAX_HISTORY: Final = "max_history"
CONF_TEMPERATURE: Final = "temperature"
CONF_MAX_TOKENS: Final = "max_tokens"
CONF_REQUEST_TIMEOUT: Final = "request_timeout"

DEFAULT_TOOL_ROUNDS: Final = 3
DEFAULT_MAX_HISTORY: Final = 20
DEFAULT_TEMPERATURE: Final = 0.7
DEFAULT_MAX_TOKENS: Final = 1024
DEFAULT_REQUEST_TIMEOUT: Final = 60

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
DEFAULT_QUIET_MINUTES: Final = 30
SERVICE_DELETE_CONVERSATIONS: Final = "delete_conversations"
ATTR_OLDER_THAN_DAYS: Final = "older_than_days"
ATTR_CONVERSATION_ID: Final = "conversation_id"

# A new agent's options; CONF_MODEL is added from the server's model list.
DEFAULT_AGENT_OPTIONS: Final[dict[str, Any]] = {
    CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
    CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
    CONF_TOOL_ROUNDS: DEFAULT_TOOL_ROUNDS,
    CONF_MAX_HISTORY: DEFAULT_MAX_HISTORY,
    CONF_TEMPERATURE: DEFAULT_TEMPERATURE,
    CONF_MAX_TOKENS: DEFAULT_MAX_TOKENS,
    CONF_REQUEST_TIMEOUT: DEFAULT_REQUEST_TIMEOUT,
    CONF_RECORD: True,
}

# AI Task entities (`ai_task.generate_data`), one per subentry of this type.
SUBENTRY_AI_TASK: Final = "ai_task_data"
# A new AI task's options; CONF_MODEL is added from the server's model list.
# Structured answers want a steady model, and a whole JSON document.
DEFAULT_AI_TASK_OPTIONS: Final[dict[str, Any]] = {
    CONF_TEMPERATURE: 0.2,
    CONF_MAX_TOKENS: 2048,
    CONF_REQUEST_TIMEOUT: 120,
}

# What the person hears when the language model fails, by kind of fault and
# language; English when the conversation's language has no entry.
FAULT_MESSAGES: Final[dict[str, dict[str, str]]] = {
    "cannot_connect": {
        "en": "Sorry, I can't reach the language model server right now.",
        "it": "Scusa, non riesco a raggiungere il server del modello linguistico.",
    },
    "timeout": {
        "en": "Sorry, the language model server did not answer in time.",
        "it": "Scusa, il server del modello linguistico non ha risposto in tempo.",
    },
    "invalid_auth": {
        "en": "Sorry, the language model server refused my API key.",
        "it": "Scusa, il server del modello linguistico ha rifiutato la mia chiave.",
    },
    "server_error": {
        "en": "Sorry, the language model server reported an error.",
        "it": "Scusa, il server del modello linguistico ha segnalato un errore.",
    },
    "stream_cut": {
        "en": "Sorry, my connection to the language model was cut off.",
        "it": "Scusa, la connessione al modello linguistico si è interrotta.",
    },
    "unreadable": {
        "en": "Sorry, the language model sent an answer I could not read.",
        "it": "Scusa, il modello linguistico ha inviato una risposta illeggibile.",
    },
    # Not a fault of the server: the model ended its answer without a word.
    "empty": {
        "en": "Sorry, I have no answer to that.",
        "it": "Scusa, non ho una risposta.",
    },
}

# Tools from the config folder (issue 4).
# <HA config dir>/desktop_assistant/: config.toml and tools/<name>.toml.
TOOLS_FOLDER: Final = "desktop_assistant"
# The loaded tools; the agent lists and runs them through this registry.
DATA_TOOLS: HassKey[ToolRegistry] = HassKey(f"{DOMAIN}_tools")
# A tool's intent type is this prefix + its name in CamelCase.
INTENT_PREFIX: Final = "DesktopAssistant"
SERVICE_RUN_TOOL: Final = "run_tool"
SERVICE_RELOAD: Final = "reload"
ATTR_TOOL: Final = "tool"
ATTR_ARGUMENTS: Final = "arguments"
