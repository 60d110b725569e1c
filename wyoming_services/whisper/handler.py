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
from wyoming.server import AsyncEventHandler

from .client import WhisperClient, WhisperServerError
from .languages import AUTO, whisper_code

_LOGGER = logging.getLogger(__name__)

# What whisper-server reads: 16 kHz, 16-bit, mono WAV.
RATE = 16000
WIDTH = 2
CHANNELS = 1
MAX_SECONDS = 300  # far past any voice command; bounds memory per connection


class UtteranceError(Exception):
    """The utterance cannot be transcribed; the message goes to the client."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class WhisperEventHandler(AsyncEventHandler):
    """One client connection; each AudioStart..AudioStop is one utterance."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        info: Info,
        client: WhisperClient,
        language_setting: str,
    ) -> None:
        super().__init__(reader, writer)
        self._info = info
        self._client = client
        self._language_setting = language_setting
        self._requested_language: str | None = None
        self._audio = bytearray()
        self._converter = AudioChunkConverter(rate=RATE, width=WIDTH, channels=CHANNELS)
        self._to_width = AudioChunkConverter(width=WIDTH)
        self._problem: UtteranceError | None = None
        self._receiving = False

    async def handle_event(self, event: Event) -> bool:
        """Answer Describe; collect audio; transcribe at AudioStop."""
        if Describe.is_type(event.type):
            await self.write_event(self._info.event())
        elif Transcribe.is_type(event.type):
            self._requested_language = Transcribe.from_event(event).language
        elif AudioStart.is_type(event.type):
            self._start_utterance()
        elif AudioChunk.is_type(event.type):
            if not self._receiving:
                self._start_utterance()
            self._add_audio(AudioChunk.from_event(event))
        elif AudioStop.is_type(event.type):
            await self._finish_utterance()
        return True

    def _start_utterance(self) -> None:
        self._audio.clear()
        # The converter keeps resampling state, so one per utterance.
        self._converter = AudioChunkConverter(rate=RATE, width=WIDTH, channels=CHANNELS)
        self._problem = None
        self._receiving = True

    def _add_audio(self, chunk: AudioChunk) -> None:
        if self._problem is not None:
            return
        try:
            converted = self._converter.convert(self._downmix(chunk))
        except Exception:  # malformed chunks fail in many ways; all end the same
            self._problem = UtteranceError(
                f"cannot convert audio of {chunk.rate} Hz, {chunk.width} bytes, "
                f"{chunk.channels} channels",
                "bad-audio",
            )
            return
        if len(self._audio) + len(converted.audio) > MAX_SECONDS * RATE * WIDTH:
            self._problem = UtteranceError(
                f"utterance is longer than {MAX_SECONDS} s", "too-long"
            )
            return
        self._audio += converted.audio

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
            result = await self._client.transcribe(_wav(audio), language)
        except UtteranceError as err:
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
            "transcribed %.2f s of audio in %.0f ms (whisper-server %.0f ms): "
            "language %s (asked %s), %d characters",
            len(audio) / (RATE * WIDTH),
            (time.monotonic() - started) * 1000,
            result.seconds * 1000,
            spoken or "unknown",
            language,
            len(result.text),
        )
        _LOGGER.debug("transcript: %s", result.text)

    def _language_for_whisper(self) -> str:
        """The configured language wins; otherwise the client's; else detect."""
        if self._language_setting:
            return self._language_setting
        if not self._requested_language:
            return AUTO
        code = whisper_code(self._requested_language)
        if code is None:
            raise UtteranceError(
                f"whisper does not know the language {self._requested_language!r}",
                "unsupported-language",
            )
        return code


def _wav(audio: bytes) -> bytes:
    with io.BytesIO() as buffer:
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(CHANNELS)
            wav.setsampwidth(WIDTH)
            wav.setframerate(RATE)
            wav.writeframes(audio)
        return buffer.getvalue()
