"""What the record holds: conversations and their entries."""

from dataclasses import dataclass, field
from typing import Any, Final, Literal

type Channel = Literal["voice", "text"]
type EntryKind = Literal["user", "assistant", "tool_call", "fault"]

# A tool's result is kept up to this many characters.
MAX_TOOL_RESULT: Final = 4000


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing said or done in a conversation."""

    kind: EntryKind
    at: float  # seconds since the epoch (UTC)
    text: str | None = None
    # user: "speech" (a transcript) or "text" (typed)
    source: Literal["speech", "text"] | None = None
    # assistant: a fault cut the reply short
    interrupted: bool = False
    tool_name: str | None = None
    tool_arguments: dict[str, Any] | None = None
    tool_result: str | None = None
    tool_error: bool | None = None
    # fault: its kind (cannot_connect, stream_cut, ...)
    fault: str | None = None
    # assistant: the server (its entry's title) and model that answered
    server: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ConversationStart:
    """What is known of a conversation when one of its turns begins."""

    conversation_id: str
    agent_id: str
    config_entry_id: str | None
    channel: Channel
    device_id: str | None
    device_name: str | None
    language: str | None
    # Whose it is: the user who typed it; None for the household's.
    user_id: str | None = None


@dataclass(slots=True)
class TurnWrite:
    """Entries of one conversation to append, and when it was last active."""

    start: ConversationStart
    at: float
    entries: list[Entry] = field(default_factory=list)
