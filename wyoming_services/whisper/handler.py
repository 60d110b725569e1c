"""Wyoming events for speech-to-text: Transcribe, audio in, Transcript out."""

import asyncio
import io
import logging
import time
import wave

import numpy as np
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioChunkConverter, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info

from ..limits import ClientLimits
from ..service import BadEventError, GuardedEventHandler
from .client import WhisperServerError
from .early import EarlyTranscript
from .languages import AUTO, whisper_code
from .servers import WhisperServers

_LOGGER = logging.getLogger(__name__)

# What whisper-server reads: 16 kHz, 16-bit, mono WAV.
RATE = 16000
WIDTH = 2
CHANNELS = 1
MAX_SECONDS = 300  # far past any voice command; bounds memory per connection
# What microphones send; anything else is refused before it is converted.
RATES = range(8000, 48001)
WIDTHS = range(1, 5)
CHANNEL_COUNTS = range(1, 9)


class UtteranceError(Exception):
    """The utterance cannot be transcribed; the message goes to the client."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class WhisperEventHandler(GuardedEventHandler):
    """One client connection; each AudioStart..AudioStop is one utterance."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        info: Info,
        servers: WhisperServers,
        language_setting: str,
        limits: ClientLimits | None = None,
        transcribe_at_pause: bool = True,
    ) -> None:
        super().__init__(reader, writer, limits)
        self._info = info
        self._servers = servers
        self._language_setting = language_setting
        self._requested_language: str | None = None
        self._audio = bytearray()
        self._converter = AudioChunkConverter(rate=RATE, width=WIDTH, channels=CHANNELS)
        self._to_width = AudioChunkConverter(width=WIDTH)
        self._problem: UtteranceError | None = None
        self._receiving = False
        self._early = EarlyTranscript(servers, transcribe_at_pause, self.peer)

    async def handle_event(self, event: Event) -> bool:
        """Answer Describe; collect audio; transcribe at AudioStop."""
        if Describe.is_type(event.type):
            await self.write_event(self._info.event())
        elif Transcribe.is_type(event.type):
            language = event.data.get("language")
            if language is not None and not isinstance(language, str):
                raise BadEventError("language must be a string")
            self._requested_language = language
        elif AudioStart.is_type(event.type):
            self._start_utterance()
            self._check_format(_audio_format(event))
        elif AudioChunk.is_type(event.type):
            if not self._receiving:
                self._start_utterance()
            rate, width, channels = _audio_format(event)
            self._add_audio(AudioChunk(rate, width, channels, event.payload or b""))
        elif AudioStop.is_type(event.type):
            await self._finish_utterance()
            self.hold(0)  # held while it was transcribed
        return True

    def _start_utterance(self) -> None:
        self._audio.clear()
        self.hold(0)
        # The converter keeps resampling state, so one per utterance.
        self._converter = AudioChunkConverter(rate=RATE, width=WIDTH, channels=CHANNELS)
        self._problem = None
        self._receiving = True
        self._early.start()

    def _check_format(self, audio_format: tuple[int, int, int]) -> None:
        """Refuse a format no microphone sends, before converting any of it."""
        rate, width, channels = audio_format
        if self._problem is not None or (
            rate in RATES and width in WIDTHS and channels in CHANNEL_COUNTS
        ):
            return
        self._problem = UtteranceError(
            f"cannot take audio of {rate} Hz, {width} bytes, {channels} channels "
            f"(takes {RATES.start}-{RATES.stop - 1} Hz, {WIDTHS.start}-"
            f"{WIDTHS.stop - 1} bytes, {CHANNEL_COUNTS.start}-"
            f"{CHANNEL_COUNTS.stop - 1} channels)",
            "bad-audio",
        )

    def _add_audio(self, chunk: AudioChunk) -> None:
        self._check_format((chunk.rate, chunk.width, chunk.channels))
        if self._problem is not None:
            return
        # Checked on the size the chunk will have once converted, before
        # converting it: 8 kHz 8-bit audio grows fourfold.
        frames = len(chunk.audio) // (chunk.width * chunk.channels)
        converted_size = (frames * RATE // chunk.rate + 1) * WIDTH * CHANNELS
        if len(self._audio) + converted_size > MAX_SECONDS * RATE * WIDTH:
            self._problem = UtteranceError(
                f"utterance is longer than {MAX_SECONDS} s", "too-long"
            )
            return
        self.hold(len(self._audio) + converted_size)  # the server's bound for all
        try:
            converted = self._converter.convert(self._downmix(chunk))
        except Exception:  # malformed chunks fail in many ways; all end the same
            self._problem = UtteranceError(
                f"cannot convert audio of {chunk.rate} Hz, {chunk.width} bytes, "
                f"{chunk.channels} channels",
                "bad-audio",
            )
            return
        self._audio += converted.audio
        self._early.heard(converted.audio, len(self._audio), self._early_request)

    def _early_request(self) -> tuple[bytes, str] | None:
        """What to ask for at a pause: the audio so far, in the language to use."""
        try:
            # The language first: a refused one is refused before any WAV.
            language = self._language_for_whisper()
        except UtteranceError:
            return None  # refused at audio-stop
        return _wav(bytes(self._audio)), language

    def _downmix(self, chunk: AudioChunk) -> AudioChunk:
        """Average the channels into one.

        The converter only mixes stereo, and it sums the two channels, which
        doubles a centred voice and clips it.
        """
        if chunk.channels == 1:
            return chunk
        chunk = self._to_width.convert(chunk)
        frames = np.frombuffer(chunk.audio, dtype="<i2").reshape(-1, chunk.channels)
        mono = frames.mean(axis=1).round().astype("<i2")
        return AudioChunk(chunk.rate, WIDTH, 1, mono.tobytes())

    async def _finish_utterance(self) -> None:
        started = time.monotonic()
        audio, problem = bytes(self._audio), self._problem
        self._audio.clear()
        self._receiving = False
        try:
            if problem is not None:
                raise problem
            if not audio:
                raise UtteranceError("no audio arrived before audio-stop", "no-audio")
            language = self._language_for_whisper()
            result = await self._early.result(len(audio), language)
            asked = "at a pause" if result is not None else "at audio-stop"
            if result is None:
                result = await self._servers.transcribe(
                    _wav(audio), language, self.peer
                )
        except UtteranceError as err:
            await self._early.close()
            _LOGGER.warning("utterance refused: %s", err)
            await self.write_event(Error(text=str(err), code=err.code).event())
            return
        except WhisperServerError as err:
            _LOGGER.warning("transcription failed: %s", err)
            await self.write_event(Error(text=str(err), code="whisper-server").event())
            return

        spoken = result.language or (None if language == AUTO else language)
        await self.write_event(Transcript(text=result.text, language=spoken).event())
        _LOGGER.info(
            "transcribed %.2f s of audio in %.0f ms (whisper-server at %s %.0f ms): "
            "language %s (asked %s), %d characters; answered with the transcript "
            "asked %s (%d asked at pauses)",
            len(audio) / (RATE * WIDTH),
            (time.monotonic() - started) * 1000,
            result.url,
            result.seconds * 1000,
            spoken or "unknown",
            language,
            len(result.text),
            asked,
            self._early.requests,
        )
        _LOGGER.debug("transcript: %s", result.text)

    async def disconnect(self) -> None:
        """The client left: no request made at a pause outlives its connection."""
        await self._early.close()

    def _language_for_whisper(self) -> str:
        """The configured language wins; otherwise the client's; else detect."""
        if self._language_setting:
            return self._language_setting
        if not self._requested_language:
            return AUTO
        code = whisper_code(self._requested_language)
        if code is None:
            raise UtteranceError(
                f"whisper does not know the language {self._requested_language!r:.60}",
                "unsupported-language",
            )
        return code


def _audio_format(event: Event) -> tuple[int, int, int]:
    """An audio event's rate, width and channels, each a whole number."""
    values = []
    for key in ("rate", "width", "channels"):
        value = event.data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadEventError(f"{key} must be a whole number, got {value!r:.40}")
        values.append(value)
    rate, width, channels = values
    return rate, width, channels


def _wav(audio: bytes) -> bytes:
    with io.BytesIO() as buffer:
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(CHANNELS)
            wav.setsampwidth(WIDTH)
            wav.setframerate(RATE)
            wav.writeframes(audio)
        return buffer.getvalue()
