"""Short pieces already spoken, kept per voice, within a cap on their bytes.

The tool files' announcements, the fault and confirmation sentences and the
frequent openings come back again and again: spoken from here, their first
audio needs no synthesis at all.
"""

from collections import OrderedDict
from dataclasses import dataclass
import threading

# Only short pieces are kept: long ones rarely repeat word for word.
MAX_CACHED_CHARACTERS = 120


@dataclass(frozen=True)
class CacheReport:
    """What the cache holds, for the log line and the benchmark."""

    pieces: int
    size: int  # bytes of audio held
    cap: int
    hits: int
    misses: int

    def __str__(self) -> str:
        return (
            f"{self.pieces} piece(s), {self.size / 1024:.0f} KiB of "
            f"{self.cap / 1024:.0f} KiB, {self.hits} hit(s), {self.misses} miss(es)"
        )


class PhraseCache:
    """Audio by (voice, piece), least recently used dropped first.

    Read on the event loop and filled from the synthesis thread: a lock keeps
    the order and the byte count consistent.
    """

    def __init__(self, cap_bytes: int) -> None:
        self.cap = cap_bytes
        self._audio: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()

    @staticmethod
    def keeps(piece: str) -> bool:
        """Whether a piece is short enough to be kept."""
        return len(piece) <= MAX_CACHED_CHARACTERS

    def get(self, voice: str, piece: str) -> bytes | None:
        """The audio `voice` gave `piece` before, if it is still kept."""
        key = (voice, piece.strip())
        with self._lock:
            audio = self._audio.get(key)
            if audio is None:
                self._misses += 1
                return None
            self._audio.move_to_end(key)
            self._hits += 1
            return audio

    def holds(self, voice: str, piece: str) -> bool:
        """Whether the audio of `piece` by `voice` is kept (not counted as a use)."""
        with self._lock:
            return (voice, piece.strip()) in self._audio

    def put(self, voice: str, piece: str, audio: bytes) -> None:
        """Keep the audio of a short piece, dropping the oldest over the cap."""
        if not self.keeps(piece) or len(audio) > self.cap:
            return
        key = (voice, piece.strip())
        with self._lock:
            if (old := self._audio.pop(key, None)) is not None:
                self._bytes -= len(old)
            self._audio[key] = audio
            self._bytes += len(audio)
            while self._bytes > self.cap:
                _, dropped = self._audio.popitem(last=False)
                self._bytes -= len(dropped)

    def report(self) -> CacheReport:
        """How much it holds now."""
        with self._lock:
            return CacheReport(
                pieces=len(self._audio),
                size=self._bytes,
                cap=self.cap,
                hits=self._hits,
                misses=self._misses,
            )
