"""Every `hass.data` key of the integration and its typed config entry, in one place.

The types are imported only for type checking: every feature imports this
module, and this module imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from homeassistant.config_entries import ConfigEntry
from homeassistant.util.hass_dict import HassKey

from .const import DOMAIN

if TYPE_CHECKING:
    from .agent.confirmation import Confirmations
    from .chat.turns import ChatTurns
    from .jobs import Outcome, RegisteredJob
    from .memory.memory import Memory
    from .record.conversation_record import Record
    from .server.activity import ServerActivity
    from .server.client import LlamaServerClient
    from .server.health import ServerHealth
    from .server.wake import Waker
    from .store import Store
    from .tools import ToolRegistry


@dataclass(slots=True)
class ServerRuntime:
    """A llama-server entry's runtime data: its client, health and waker."""

    client: LlamaServerClient
    health: ServerHealth
    # Wake-on-LAN of the server's machine; None without a MAC.
    waker: Waker | None = None
    # The models of the entry's agents, the first a fallback asks for.
    models: list[str] = field(default_factory=list)


# A llama-server entry; its runtime data is its server's client and health.
type DesktopAssistantConfigEntry = ConfigEntry[ServerRuntime]

# The loaded tool files; agents, intents and actions run tools through it.
DATA_TOOLS: HassKey[ToolRegistry] = HassKey(f"{DOMAIN}_tools")
# The one SQLite database of the integration.
DATA_STORE: HassKey[Store] = HassKey(f"{DOMAIN}_store")
# The conversation record.
DATA_RECORD: HassKey[Record] = HassKey(f"{DOMAIN}_record")
# Chat's running turns and who listens to them.
DATA_CHAT: HassKey[ChatTurns] = HassKey(f"{DOMAIN}_chat")
# Long-term memory, when its store opened.
DATA_MEMORY: HassKey[Memory] = HassKey(f"{DOMAIN}_memory")
# Memory's nightly pass as a registered job, when memory is available.
DATA_NIGHTLY_JOB: HassKey[RegisteredJob] = HassKey(f"{DOMAIN}_nightly_job")
# Changing tool calls waiting for a person's yes.
DATA_CONFIRMATIONS: HassKey[Confirmations] = HassKey(f"{DOMAIN}_confirmations")
# The server entry (its id) that answered each conversation's first turn.
DATA_STICKY: HassKey[dict[str, str]] = HassKey(f"{DOMAIN}_sticky_servers")
# Whether a conversation is talking to a llama-server now.
DATA_ACTIVITY: HassKey[ServerActivity] = HassKey(f"{DOMAIN}_server_activity")
# The registered jobs (jobs/), by name.
DATA_JOBS: HassKey[dict[str, RegisteredJob]] = HassKey(f"{DOMAIN}_jobs")
# The names of the jobs running now.
DATA_RUNNING_JOBS: HassKey[set[str]] = HassKey(f"{DOMAIN}_running_jobs")
# Job runs whose end the store refused (id -> outcome); the next run writes it.
DATA_UNRECORDED_RUNS: HassKey[dict[int, Outcome]] = HassKey(f"{DOMAIN}_unrecorded_runs")
