"""Wyoming events for text-to-speech: one-shot Synthesize and streamed text."""

import asyncio
import contextlib
import copy
from dataclasses import dataclass, field
import logging
import time
from typing import Any

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from ..limits import STREAM_IDLE_SECONDS, ClientLimits
from ..service import BadEventError, GuardedEventHandler
from .engine import CHANNELS, RATE, WIDTH, EngineError, KokoroEngine, Speech, Stages
from .language import AutoVoice, UnknownVoiceError, Voices
from .phrasing import Breaks, language_breaks
from .splitter import Pacer, TextSplitter, speakable_pieces, text_pieces
from .voices import Voice

_LOGGER = logging.getLogger(__name__)

# A sentence is synthesised whole, so small chunks would not start playback
# sooner; half-second chunks keep the event loop's per-event work low.
SAMPLES_PER_CHUNK = 12000
# The sentence splitter ends a sentence only when the next one starts. Text
# that ends in sentence punctuation and is followed by this long a pause is
# spoken as it is: the agent's announcement before a tool call would
# otherwise wait for the tool's answer, the very wait it is meant to fill.
SENTENCE_PAUSE = 0.1
# Sentences are spoken in pieces (see `Pacer`): a short first piece, growing
# ones, then clauses; while Kokoro has nothing to speak, the pieces of the
# sentence being written are spoken without waiting for its end. A clause is
# at least this long (three words or so); "Sure," goes with what follows it.
MIN_CLAUSE = 16


@dataclass
class _Request:
    """Timings and totals of one request, for its log line."""

    kind: str
    voice: str
    started: float = field(default_factory=time.monotonic)
    first_audio: float | None = None
    sentences: int = 0
    characters: int = 0
    audio_seconds: float = 0.0
    spoken_by: list[str] = field(default_factory=list)
    cached: int = 0  # pieces that came from the cache
    first_stages: Stages | None = None  # where the first piece's time went
    first_writing: float = 0.0  # seconds writing the first piece's events
    most_waiting: int = 0  # the most characters that waited to be spoken at once

    def add(self, sentence: str, speech: Speech, writing: float) -> None:
        if self.first_audio is None:
            self.first_audio = time.monotonic()
            self.first_stages = speech.stages
            self.first_writing = writing
        self.sentences += 1
        self.characters += len(sentence)
        self.audio_seconds += speech.seconds
        self.cached += speech.cached
        if speech.voice.name not in self.spoken_by:
            self.spoken_by.append(speech.voice.name)

    @property
    def breakdown(self) -> dict[str, float]:
        """The first piece's seconds per stage, for the log and the benchmark."""
        stages = self.first_stages or Stages()
        return {
            "phonemes": stages.phonemes,
            "style": stages.style,
            "inference": stages.inference,
            "writing": self.first_writing,
        }

    def log(self) -> None:
        first = (
            f"{(self.first_audio - self.started) * 1000:.0f} ms"
            if self.first_audio is not None
            else "never"
        )
        stages = ", ".join(
            f"{stage} {seconds * 1000:.0f}" for stage, seconds in self.breakdown.items()
        )
        # Streamed text waits for speech; the peak shows the bound held.
        waiting = (
            f", at most {self.most_waiting} characters waiting"
            if self.kind == "streamed"
            else ""
        )
        _LOGGER.info(
            "%s %d piece(s), %d characters, voice %s (%s): %.2f s of audio in "
            "%.0f ms, first audio after %s (%s ms)%s, %d piece(s) from the cache",
            self.kind,
            self.sentences,
            self.characters,
            self.voice,
            ", ".join(self.spoken_by) or "-",
            self.audio_seconds,
            (time.monotonic() - self.started) * 1000,
            first,
            stages,
            waiting,
            self.cached,
            extra={"breakdown": self.breakdown, "most_waiting": self.most_waiting},
        )


@dataclass
class _TextStream:
    """A SynthesizeStart..SynthesizeStop exchange in progress."""

    voice: Voice | AutoVoice | None  # None: refused, the rest is ignored
    request: _Request
    pacer: Pacer
    splitter: TextSplitter = field(default_factory=TextSplitter)
    sentences: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    failed: bool = False
    pause: asyncio.TimerHandle | None = None
    # The worker waits for text to speak (from the start: until its task
    # first runs, events already received are handled before it).
    waiting: bool = True
    # Characters queued for the worker and not spoken yet.
    queued: int = 0
    # Set each time the worker takes a piece, and when it ends.
    taken: asyncio.Event = field(default_factory=asyncio.Event)

    def stop_waiting_for_pause(self) -> None:
        """Forget the pending end of a sentence: more text came, or the end."""
        if self.pause is not None:
            self.pause.cancel()
            self.pause = None

    def speak_pending(self) -> None:
        """Hand the text held back so far to the speaker as one sentence."""
        self.pause = None
        self.speak(self.splitter.finish())

    def speak(self, sentence: str) -> None:
        """Queue a sentence for the worker, piece by piece."""
        for piece in speakable_pieces(self.pacer.pieces(sentence)):
            self.queue(piece)

    def queue(self, piece: str) -> None:
        """Hand one piece to the worker."""
        self.queued += len(piece)
        self.sentences.put_nowait(piece)

    async def next_piece(self) -> str | None:
        """The worker's next piece (None: the end), or what is written so far."""
        self.waiting = True
        self.speak_written_if_waiting()
        try:
            piece = await self.sentences.get()
        finally:
            self.waiting = False
        self.queued -= len(piece or "")
        self.taken.set()
        return piece

    @property
    def waiting_characters(self) -> int:
        """What waits to be spoken: queued pieces and the text held back."""
        return self.queued + len(self.splitter.held)

    async def drain_to(self, limit: int) -> None:
        """Return once at most `limit` characters are queued, or the worker ended."""
        self.request.most_waiting = max(
            self.request.most_waiting, self.waiting_characters
        )
        worker = self.worker
        while self.queued > limit and worker is not None and not worker.done():
            self.taken.clear()
            await self.taken.wait()

    @property
    def idle(self) -> bool:
        """The worker waits and nothing is queued for it."""
        return self.waiting and self.sentences.empty()

    def speak_written_if_waiting(self) -> None:
        """Give the waiting worker the pieces of the unfinished sentence."""
        if not self.idle:
            return
        if end := self.pacer.end(self.splitter.held):
            head, *sentences = self.splitter.take(end)
            self.pacer.taken(head)
            self.queue(head)
            for sentence in sentences:
                self.speak(sentence)
        elif self.pacer.ramped and (written := self.splitter.take_clauses(MIN_CLAUSE)):
            self.speak(written)

    def pending_pieces(self) -> list[str]:
        """The pieces the held text would be spoken as now (nothing is taken)."""
        return copy.deepcopy(self.pacer).pieces(self.splitter.held)


class KokoroEventHandler(GuardedEventHandler):
    """One client connection."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        info: Info,
        engine: KokoroEngine,
        voices: Voices,
        max_characters: int,
        limits: ClientLimits | None = None,
    ) -> None:
        super().__init__(reader, writer, limits)
        self._info = info
        self._engine = engine
        self._voices = voices
        self._max_characters = max_characters
        self._stream: _TextStream | None = None

    def idle_timeout(self) -> float | None:
        """Longer in a stream that has spoken all it got: a tool may run meanwhile.

        A client whose text waits unspoken is held to the usual bound.
        """
        idle = super().idle_timeout()
        stream = self._stream
        if (
            stream is None
            or idle is None
            or not stream.idle
            or stream.waiting_characters
        ):
            return idle
        return max(idle, STREAM_IDLE_SECONDS)

    async def handle_event(self, event: Event) -> bool:
        """Dispatch one event."""
        await self._handle(event)
        return True

    async def disconnect(self) -> None:
        """Stop speaking for a client that is gone."""
        await self._abandon_stream()

    async def _abandon_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.stop_waiting_for_pause()
        if stream is not None and stream.worker is not None:
            stream.worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stream.worker
        self.hold(0)

    async def _handle(self, event: Event) -> None:
        if Describe.is_type(event.type):
            await self.write_event(self._info.event())
        elif SynthesizeStart.is_type(event.type):
            await self._start_stream(_voice(event.data))
        elif SynthesizeChunk.is_type(event.type):
            text = _text(event.data)
            if self._stream is not None:
                await self._add_chunk(text)
        elif SynthesizeStop.is_type(event.type):
            await self._finish_stream()
        elif Synthesize.is_type(event.type) and self._stream is None:
            # Inside a stream, Synthesize repeats the streamed text for older
            # servers; speaking it would say everything twice.
            await self._speak_once(
                Synthesize(text=_text(event.data), voice=_voice(event.data))
            )
            self.hold(0)

    # One-shot --------------------------------------------------------------

    async def _speak_once(self, synthesize: Synthesize) -> None:
        request = _Request("spoke", _voice_name(synthesize.voice))
        if len(synthesize.text) > self._max_characters:
            await self._refuse_length(len(synthesize.text))
            return
        self.hold(len(synthesize.text))
        try:
            voice = self._voices.resolve(synthesize.voice)
        except UnknownVoiceError as err:
            await self._refuse(err)
            return
        await self.write_event(
            AudioStart(rate=RATE, width=WIDTH, channels=CHANNELS).event()
        )
        previous = None
        for piece in text_pieces(synthesize.text, breaks_of(voice), MIN_CLAUSE):
            try:
                speech = await self._engine.speak(piece, voice, previous)
            except EngineError as err:
                _LOGGER.warning("synthesis failed: %s", err)
                await self.write_event(Error(text=str(err), code="synthesis").event())
                return
            request.add(piece, speech, await self._write_audio(speech.pcm))
            previous = speech.voice
        await self.write_event(AudioStop().event())
        request.log()

    # Streaming -------------------------------------------------------------

    async def _start_stream(self, requested: SynthesizeVoice | None) -> None:
        await self._abandon_stream()  # a new start replaces an unfinished one
        request = _Request("streamed", _voice_name(requested))
        try:
            voice: Voice | AutoVoice | None = self._voices.resolve(requested)
        except UnknownVoiceError as err:
            await self._refuse(err)
            voice = None
        pacer = Pacer(breaks_of(voice) if voice else Breaks(), MIN_CLAUSE)
        stream = _TextStream(voice=voice, request=request, pacer=pacer)
        if voice is not None:
            stream.worker = asyncio.create_task(
                self._speak_stream(stream), name="kokoro stream"
            )
        self._stream = stream

    async def _add_chunk(self, text: str) -> None:
        """Take streamed text; past the limit, wait for speech to catch up.

        An LLM writes faster than Kokoro speaks on a CPU. While more than the
        limit of a one-shot request waits, no further event is read: the
        client's text waits in the socket (TCP backpressure), not here.
        """
        stream = self._stream
        assert stream is not None
        self._add_text(text)
        self.hold(stream.waiting_characters)  # the server's bound for all
        await stream.drain_to(self._max_characters)

    async def _refuse_length(self, characters: int) -> None:
        _LOGGER.warning("request refused: %d characters of text", characters)
        error = Error(
            text=f"text of {characters} characters is longer than "
            f"the limit of {self._max_characters}",
            code="text-too-long",
        )
        await self.write_event(error.event())

    def _add_text(self, text: str) -> None:
        stream = self._stream
        assert stream is not None
        if stream.voice is None:
            return  # refused at its start: nothing of it is spoken
        stream.stop_waiting_for_pause()
        for sentence in stream.splitter.add(text):
            stream.speak(sentence)
        stream.speak_written_if_waiting()
        if not stream.splitter.ends_sentence():
            return
        # A sentence spoken before (an announcement) needs no pause to be
        # sure it ended: its audio is ready, and the worker is free.
        if stream.idle and all(
            self._engine.is_cached(piece, stream.voice)
            for piece in stream.pending_pieces()
        ):
            stream.speak_pending()
        else:
            stream.pause = asyncio.get_running_loop().call_later(
                SENTENCE_PAUSE, stream.speak_pending
            )

    async def _finish_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None or stream.worker is None:
            return
        stream.stop_waiting_for_pause()
        stream.speak_pending()
        stream.sentences.put_nowait(None)
        await stream.worker
        self.hold(0)
        if not stream.failed:
            await self.write_event(SynthesizeStopped().event())
            stream.request.log()

    async def _speak_stream(self, stream: _TextStream) -> None:
        """Speak sentences as they complete, each as its own audio start..stop."""
        try:
            await self._speak_pieces(stream)
        finally:
            stream.taken.set()  # a reader waiting for room stops waiting

    async def _speak_pieces(self, stream: _TextStream) -> None:
        assert stream.voice is not None
        previous = None
        while (piece := await stream.next_piece()) is not None:
            if stream.failed or not _speakable(piece):
                continue
            try:
                speech = await self._engine.speak(piece, stream.voice, previous)
                started = time.perf_counter()
                await self.write_event(
                    AudioStart(rate=RATE, width=WIDTH, channels=CHANNELS).event()
                )
                await self._write_audio(speech.pcm)
                await self.write_event(AudioStop().event())
                writing = time.perf_counter() - started
            except EngineError as err:
                _LOGGER.warning("synthesis failed: %s", err)
                stream.failed = True
                await self.write_event(Error(text=str(err), code="synthesis").event())
                continue
            except ConnectionError:
                stream.failed = True
                return
            stream.request.add(piece, speech, writing)
            previous = speech.voice

    # Output ----------------------------------------------------------------

    async def _write_audio(self, pcm: bytes) -> float:
        """Write the audio as chunks; the seconds it took."""
        started = time.perf_counter()
        step = SAMPLES_PER_CHUNK * WIDTH * CHANNELS
        for offset in range(0, len(pcm), step):
            chunk = AudioChunk(RATE, WIDTH, CHANNELS, pcm[offset : offset + step])
            await self.write_event(chunk.event())
        return time.perf_counter() - started

    async def _refuse(self, err: UnknownVoiceError) -> None:
        _LOGGER.warning("request refused: %s", err)
        await self.write_event(Error(text=str(err), code="unknown-voice").event())


def breaks_of(voice: Voice | AutoVoice) -> Breaks:
    """Where phrases start in the languages `voice` speaks."""
    if isinstance(voice, AutoVoice):
        return language_breaks(voice.languages)
    return language_breaks([voice.language])


def _voice_name(requested: SynthesizeVoice | None) -> str:
    if requested is not None and requested.name:
        return requested.name
    if requested is not None and requested.language:
        return f"for {requested.language}"
    return "default"


def _text(data: dict[str, Any]) -> str:
    text = data.get("text")
    if not isinstance(text, str):
        raise BadEventError("text must be a string")
    return text


def _voice(data: dict[str, Any]) -> SynthesizeVoice | None:
    voice = data.get("voice")
    if voice is None:
        return None
    if not isinstance(voice, dict) or not all(
        isinstance(voice.get(key), str | None) for key in ("name", "language")
    ):
        raise BadEventError("voice must be an object with a name or language string")
    return SynthesizeVoice(name=voice.get("name"), language=voice.get("language"))


def _speakable(sentence: str) -> bool:
    """Kokoro fails on text without a letter or digit ("...", emoji)."""
    return any(character.isalnum() for character in sentence)
