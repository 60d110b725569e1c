"""Constants for the desktop_assistant integration."""

from typing import Final

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
