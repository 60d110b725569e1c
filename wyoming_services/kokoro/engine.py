"""Kokoro in-process: loading, and synthesis on a worker thread."""

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
import logging
from pathlib import Path
import time

from kokoro_onnx import Kokoro
from kokoro_onnx.trim import trim
import numpy as np
import onnxruntime as rt
from phonemizer.backend import EspeakBackend

from .cache import PhraseCache
from .language import AutoVoice
from .voices import Voice

_LOGGER = logging.getLogger(__name__)

# kokoro-onnx always produces 24 kHz float samples; clients get 16-bit mono.
RATE = 24000
WIDTH = 2
CHANNELS = 1
# Kokoro reads at most 510 tokens (one per phoneme) and kokoro-onnx cuts a
# longer text off; its own split is at punctuation only. Pieces stay below,
# with room for kokoro-onnx's separators.
MAX_PHONEMES = 500
PHONEME_PAUSES = ".!?;:,—…"
CPU = "CPUExecutionProvider"


class EngineError(Exception):
    """Kokoro could not be loaded or could not speak (short message)."""


@dataclass(frozen=True)
class Stages:
    """Seconds one piece spent in each stage of its synthesis."""

    phonemes: float = 0.0  # espeak-ng
    style: float = 0.0  # choosing the voice (auto: the language) and its style row
    inference: float = 0.0  # onnxruntime, and trimming the silence around it

    def __add__(self, other: "Stages") -> "Stages":
        return Stages(
            self.phonemes + other.phonemes,
            self.style + other.style,
            self.inference + other.inference,
        )


@dataclass(frozen=True)
class Speech:
    """One piece's audio, the voice that spoke it, and where its time went."""

    voice: Voice
    pcm: bytes  # RATE Hz, WIDTH bytes, CHANNELS channel(s)
    stages: Stages = Stages()
    cached: bool = False

    @property
    def seconds(self) -> float:
        """How long the audio plays."""
        return len(self.pcm) / (RATE * WIDTH * CHANNELS)


def execution_providers(requested: Sequence[str]) -> list[str]:
    """The providers to run on: unknown names refused, unavailable ones skipped.

    ONNX Runtime knows every provider's name in every build, but a build
    (onnxruntime or onnxruntime-gpu) has only some of them; the CPU is
    always there and always last.
    """
    known = rt.get_all_providers()
    for name in requested:
        if name not in known:
            raise EngineError(
                f"kokoro.providers: unknown execution provider {name!r:.60} "
                f"(known: {', '.join(known)})"
            )
    available = rt.get_available_providers()
    missing = [name for name in requested if name not in available]
    if missing:
        _LOGGER.warning(
            "kokoro.providers: %s not available in this onnxruntime (available: "
            "%s; CUDA needs the gpu extra, onnxruntime-gpu): running on the CPU",
            ", ".join(missing),
            ", ".join(available),
        )
    chosen = [name for name in requested if name in available and name != CPU]
    return [*chosen, CPU]


def session_options() -> rt.SessionOptions:
    """ONNX Runtime's options, as measured by benchmarks/wyoming_bench.py.

    One piece at a time: every core goes to the operators of that piece
    (intra-op), none to running operators side by side (inter-op); all
    graph optimisations and the memory arena. Idle threads spin (ONNX
    Runtime's default): on the nearly quiet 2-core machine that took 0.9
    times as long as sleeping threads; under heavy load sleeping ones won
    (docs/voice.md).
    """
    options = rt.SessionOptions()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = True
    return options


def load_kokoro(
    model: Path,
    voices: Path,
    providers: Sequence[str] = (CPU,),
    options: rt.SessionOptions | None = None,
) -> tuple[Kokoro, dict[str, np.ndarray]]:
    """Load the ONNX model on its providers and every style in the voices file."""
    for what, path in (("kokoro.model", model), ("kokoro.voices", voices)):
        if not path.is_file():
            raise EngineError(f"{what}: no such file {path}")
    chosen = execution_providers(providers)
    try:
        session = rt.InferenceSession(
            str(model), sess_options=options or session_options(), providers=chosen
        )
        kokoro = Kokoro.from_session(session, str(voices))
        styles = {name: np.asarray(kokoro.voices[name]) for name in kokoro.get_voices()}
    except Exception as err:  # onnxruntime and numpy raise many kinds
        raise EngineError(
            f"cannot load Kokoro from {model} and {voices}: {err}"
        ) from None
    if not styles:
        raise EngineError(f"kokoro.voices: {voices} holds no voices")
    return kokoro, styles


class Phonemizer:
    """espeak-ng phonemes exactly as kokoro-onnx's tokenizer makes them.

    kokoro-onnx builds a new espeak-ng backend for every sentence: it copies
    and loads the library again (about 25 ms, holding the GIL at times,
    which stalls the event loop). One backend per language is kept instead.
    """

    def __init__(self, vocabulary: dict[str, int]) -> None:
        self._vocabulary = vocabulary
        self._backends: dict[str, EspeakBackend] = {}

    def check(self, lang: str) -> None:
        """Fail now, not at the first sentence, if espeak-ng lacks `lang`."""
        try:
            self._backend(lang)
        except RuntimeError as err:
            raise EngineError(f"espeak-ng cannot speak it: {err}") from None

    def __call__(self, text: str, lang: str) -> str:
        """Phonemes of `text`, reduced to the symbols Kokoro has tokens for."""
        (phonemes,) = self._backend(lang).phonemize([text.strip()])
        return "".join(p for p in phonemes if p in self._vocabulary).strip()

    def _backend(self, lang: str) -> EspeakBackend:
        if lang not in self._backends:
            self._backends[lang] = EspeakBackend(
                lang, preserve_punctuation=True, with_stress=True
            )
        return self._backends[lang]


class KokoroEngine:
    """Speaks pieces; all synthesis runs on one worker thread, in arrival order.

    One thread because espeak-ng (phonemes) is not thread-safe and
    onnxruntime already uses every core for one piece. Pieces spoken before
    come from the cache on the event loop, without waiting for the thread.
    """

    def __init__(self, kokoro: Kokoro, speed: float, cache: PhraseCache) -> None:
        self._kokoro = kokoro
        self._speed = speed
        self.cache = cache
        self.phonemizer = Phonemizer(kokoro.tokenizer.vocab)
        self._input_names = {i.name for i in kokoro.sess.get_inputs()}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kokoro")

    @property
    def providers(self) -> list[str]:
        """The execution providers the session runs on."""
        return self._kokoro.sess.get_providers()

    async def speak(
        self, piece: str, voice: Voice | AutoVoice, previous: Voice | None
    ) -> Speech:
        """One piece's audio: from the cache, else synthesised off the event loop.

        `auto` chooses here (language recognition takes well under a
        millisecond for a piece), so that a piece spoken before is found in
        the cache without waiting for the synthesis thread.
        """
        started = time.perf_counter()
        chosen = choose(voice, piece, previous)
        choosing = time.perf_counter() - started
        if audio := self.cache.get(chosen.name, piece):
            return Speech(voice=chosen, pcm=audio, cached=True)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, self.synthesise, piece, chosen, choosing
        )

    def is_cached(self, piece: str, voice: Voice | AutoVoice) -> bool:
        """Whether `piece` would come from the cache now."""
        return self.cache.holds(choose(voice, piece, None).name, piece)

    def close(self) -> None:
        """Finish the piece in progress, drop queued ones, stop the thread."""
        self._executor.shutdown(wait=True, cancel_futures=True)

    def synthesise(self, piece: str, voice: Voice, choosing: float = 0.0) -> Speech:
        """Synthesise one piece on the calling thread (the worker, or at start)."""
        started = time.perf_counter()
        try:
            phonemes = self.phonemizer(piece, voice.lang)
            stages = Stages(phonemes=time.perf_counter() - started, style=choosing)
            parts = []
            for part in split_phonemes(phonemes):
                audio, timing = self._synthesise(part, voice.style)
                parts.append(audio)
                stages += timing
        except EngineError:
            raise
        except Exception as err:  # phonemizer and onnxruntime fail in many ways
            raise EngineError(f"Kokoro could not speak {piece[:40]!r}: {err}") from None
        speech = Speech(voice=voice, pcm=b"".join(parts), stages=stages)
        self.cache.put(voice.name, piece, speech.pcm)
        return speech

    def _synthesise(self, phonemes: str, style: np.ndarray) -> tuple[bytes, Stages]:
        """Run the model on phonemes (at most MAX_PHONEMES), as kokoro-onnx does."""
        started = time.perf_counter()
        tokens = self._kokoro.tokenizer.tokenize(phonemes)
        # The voice file holds one style per input length.
        row = np.asarray(style[len(tokens)], dtype=np.float32)
        ids = [[0, *tokens, 0]]
        if "input_ids" in self._input_names:  # newer exports
            inputs = {
                "input_ids": ids,
                "style": row,
                "speed": np.array([self._speed], dtype=np.int32),
            }
        else:
            inputs = {
                "tokens": ids,
                "style": row,
                "speed": np.array([self._speed], dtype=np.float32),
            }
        styled = time.perf_counter()
        audio = self._kokoro.sess.run(None, inputs)[0]
        audio, _ = trim(audio)  # the silence around a piece, as kokoro-onnx trims
        pcm = pcm16(audio)
        done = time.perf_counter()
        return pcm, Stages(style=styled - started, inference=done - styled)


def choose(voice: Voice | AutoVoice, piece: str, previous: Voice | None) -> Voice:
    """The voice that speaks `piece`: `auto` picks by its language."""
    return voice.pick(piece, previous) if isinstance(voice, AutoVoice) else voice


def split_phonemes(phonemes: str, limit: int = MAX_PHONEMES) -> list[str]:
    """Cut phonemes into pieces Kokoro reads whole: at a pause, else between words."""
    pieces = []
    rest = phonemes.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]
        cut = max(window.rfind(mark, 0, limit) + 1 for mark in PHONEME_PAUSES)
        if cut <= 0:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def pcm16(audio: np.ndarray) -> bytes:
    """Float samples to 16-bit little-endian PCM, clipped so loud peaks never wrap."""
    clipped = np.clip(np.asarray(audio, dtype=np.float32).reshape(-1), -1.0, 1.0)
    return (clipped * 32767).astype("<i2").tobytes()
