"""Transcribing during the silence before `audio-stop`.

Home Assistant's voice command segmenter waits out 0.7 s of silence (0.25 s
aggressive) before it ends the command and sends `audio-stop`. The relay
sees the audio as it arrives: at a pause in it, the audio so far goes to
whisper-server, and when `audio-stop` comes with no speech since, that
transcript is the answer. Speech after the pause cancels the request, and
the next pause asks again.

Pauses are found with microVAD (`pymicro-vad`), the model Home Assistant's
own pipeline runs, on 10 ms frames at its in-command threshold.
"""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
import logging
import time

from pymicro_vad import MicroVad

from .client import Transcription, WhisperServerDownError
from .servers import WhisperServers

_LOGGER = logging.getLogger(__name__)

FRAME_BYTES = 320  # 10 ms of 16 kHz 16-bit mono: what microVAD reads
# Home Assistant's in-command threshold (assist_pipeline/vad.py).
SPEECH_PROBABILITY = 0.5
# Heard after microVAD's own lag (it hears speech for about 0.2 s past its
# end, as Home Assistant's segmenter does): with 0.2 s the request started
# 0.27 s before a default audio-stop, with 0.1 s 0.39 s, and no gap between
# the words of a spoken command made a request of its own.
PAUSE_SECONDS = 0.1
# A microphone's audio comes as it is spoken (Home Assistant may hand over
# what it held at first); audio further ahead of the clock is no live speech
# and is not read, so that microVAD costs the event loop about 1.5% of the
# time, and at most 0.15 s more, whatever a client sends.
MAX_LEAD_SECONDS = 10.0
TASK_NAME = "whisper early transcript"

# What to send at a pause: the audio so far as a WAV, and the language to
# ask for; None when the utterance cannot be transcribed as it is.
type Request = Callable[[], tuple[bytes, str] | None]


def speech_probability_of(vad: object) -> Callable[[bytes], float]:
    """The reader of 10 ms of audio of microVAD, by either version's name.

    `process_10ms` from pymicro-vad 2 on, `Process10ms` before: Home
    Assistant pins 1.0.1, an add-on image installs the newest.
    """
    return getattr(vad, "process_10ms", None) or vad.Process10ms  # type: ignore[attr-defined]


class SpeechPauses:
    """One utterance's audio as microVAD hears it: where speech last ended."""

    def __init__(
        self,
        pause_seconds: float = PAUSE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._speech_probability = speech_probability_of(MicroVad())
        self._clock = clock
        self._started = clock()
        self._pause_frames = round(pause_seconds * 100)
        self._unread = bytearray()
        self._frames = 0
        self._silent_frames = 0
        self.speech_end = 0  # bytes of audio up to the last speech heard

    def feed(self, audio: bytes) -> None:
        """Read the audio that just arrived."""
        self._unread += audio
        frames = len(self._unread) // FRAME_BYTES
        lead = (self._frames + frames) / 100 - (self._clock() - self._started)
        if lead > MAX_LEAD_SECONDS:
            # Not read, so taken for speech: no pause is found inside it.
            del self._unread[: frames * FRAME_BYTES]
            self._frames += frames
            self.speech_end = self._frames * FRAME_BYTES
            self._silent_frames = 0
        while len(self._unread) >= FRAME_BYTES:
            frame = bytes(self._unread[:FRAME_BYTES])
            del self._unread[:FRAME_BYTES]
            self._frames += 1
            # microVAD answers -1 until it has read enough audio.
            if self._speech_probability(frame) > SPEECH_PROBABILITY:
                self.speech_end = self._frames * FRAME_BYTES
                self._silent_frames = 0
            else:
                self._silent_frames += 1

    @property
    def pausing(self) -> bool:
        """Speech was heard, and the audio since is silence long enough."""
        return self.speech_end > 0 and self._silent_frames >= self._pause_frames


@dataclass
class _Attempt:
    """A request made at a pause: how much audio it covers, in which language."""

    audio_bytes: int
    language: str
    task: asyncio.Task[Transcription]


class EarlyTranscript:
    """One connection's requests at pauses: at most one live, per utterance."""

    def __init__(
        self, servers: WhisperServers, enabled: bool, client: str | None = None
    ) -> None:
        self._servers = servers
        self._enabled = enabled
        # The client's address: an early request may wake as its question would.
        self._client = client
        self._pauses: SpeechPauses | None = None
        self._attempt: _Attempt | None = None
        self._cancelled: set[asyncio.Task] = set()
        self.requests = 0  # made for the current utterance

    def start(self) -> None:
        """A new utterance: forget the last one's pauses and request."""
        self._drop()
        self.requests = 0
        self._pauses = SpeechPauses() if self._enabled else None

    def heard(self, audio: bytes, audio_bytes: int, request: Request) -> None:
        """`audio` arrived, making `audio_bytes` in all; ask at a pause.

        Speech after the pause a request was made at cancels that request.
        """
        pauses = self._pauses
        if pauses is None:
            return
        pauses.feed(audio)
        if self._attempt is not None and pauses.speech_end > self._attempt.audio_bytes:
            self._drop()
        if self._attempt is None and pauses.pausing and (asked := request()):
            wav, language = asked
            self.requests += 1
            task = asyncio.create_task(
                self._servers.transcribe(wav, language, self._client), name=TASK_NAME
            )
            self._attempt = _Attempt(audio_bytes, language, task)

    async def result(self, audio_bytes: int, language: str) -> Transcription | None:
        """The transcript asked at the last pause, if it holds for the utterance.

        None when there is none: no pause, speech after it, another
        language, or no server up for it (asking again gives a server that
        just came back its chance, as at `audio-stop`). Any other fault is
        the answer: asking again would only take longer.
        """
        attempt, self._attempt = self._attempt, None
        pauses, self._pauses = self._pauses, None
        if attempt is None or pauses is None:
            return None
        if (
            pauses.speech_end > attempt.audio_bytes
            or attempt.audio_bytes > audio_bytes
            or attempt.language != language
        ):
            await _cancel(attempt.task)
            return None
        try:
            return await attempt.task
        except WhisperServerDownError:
            return None

    def _drop(self) -> None:
        """Cancel the live request; `close` waits for it to end."""
        if self._attempt is not None:
            task = self._attempt.task
            self._attempt = None
            task.cancel()
            self._cancelled.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task) -> None:
        self._cancelled.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: its fault answers nobody

    async def close(self) -> None:
        """The connection ends: cancel every request and wait until they end."""
        self._drop()
        self._pauses = None
        for task in list(self._cancelled):
            await _cancel(task)


async def _cancel(task: asyncio.Task) -> None:
    """Cancel a request and wait for it; a cancellation of our own goes on."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        if (current := asyncio.current_task()) is not None and current.cancelling():
            raise
    except Exception:  # its fault answers nobody
        _LOGGER.debug("a cancelled request ended with a fault", exc_info=True)
