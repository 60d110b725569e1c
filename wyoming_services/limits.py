"""What all the clients of one server may hold at once.

The servers listen on the LAN without authentication, as Wyoming services
do, so any device may open connections. One `ClientLimits` per server,
shared by every connection's handler, bounds how many connections it serves
at once and how much waits in memory across all of them (the relay's audio,
Kokoro's text); each handler's idle timeout closes a client that went
silent. A client past a bound gets a Wyoming `error` and is disconnected;
the others go on.
"""

from dataclasses import dataclass, field

# Sized for a household: Home Assistant holds one connection per question
# while it streams the audio or the reply, and opens short ones for the
# server's info, so 32 serve 16 satellites asking at the same moment.
DEFAULT_MAX_CONNECTIONS = 32
DEFAULT_IDLE_SECONDS = 60.0
# Inside Kokoro's started text stream that has spoken all it got: Home
# Assistant opens it when the agent's first words come before a tool call,
# and the tool and the next round on a CPU server may take minutes (the
# agent's turn limit, 300 s). Text held unspoken keeps the usual bound.
STREAM_IDLE_SECONDS = 600.0
# The relay's audio: about 1000 s at 16 kHz, 30 s for each of 32 connections.
DEFAULT_MAX_AUDIO_MB = 32
# Kokoro's text: one long reply (10000 characters) for each of 16.
DEFAULT_MAX_WAITING_CHARACTERS = 160000


class OverLimitError(Exception):
    """A client would take the server past a bound; the message says which."""


@dataclass
class ClientLimits:
    """The bounds of one server and what its clients hold now."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # What may wait in memory across every connection, in `unit`s.
    max_held: int | None = None
    unit: str = "bytes"
    # Seconds a connection may go without an event; None: forever.
    idle_seconds: float | None = DEFAULT_IDLE_SECONDS
    connections: int = field(default=0, init=False)
    held: int = field(default=0, init=False)

    def enter(self) -> bool:
        """Count a new connection in, unless as many as allowed are open."""
        if self.connections >= self.max_connections:
            return False
        self.connections += 1
        return True

    def leave(self, held: int) -> None:
        """A connection ended; what it held is free."""
        self.connections -= 1
        self.held -= held

    def change(self, before: int, after: int) -> None:
        """One connection now holds `after` instead of `before`.

        Growing past `max_held` raises `OverLimitError` and changes nothing.
        """
        if (
            self.max_held is not None
            and after > before
            and self.held - before + after > self.max_held
        ):
            raise OverLimitError(
                f"the server holds its limit of {self.max_held} {self.unit} "
                "for all its clients; try again shortly"
            )
        self.held += after - before

    @property
    def busy_message(self) -> str:
        """What a client past the connection bound is told."""
        return (
            f"the server serves at most {self.max_connections} connections at "
            "once; try again shortly"
        )
