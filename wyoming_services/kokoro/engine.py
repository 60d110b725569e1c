"""Kokoro in-process: loading, and synthesis on a worker thread."""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kokoro_onnx import Kokoro
import numpy as np
from phonemizer.backend import EspeakBackend

from .language import AutoVoice
from .voices import Voice

# kokoro-onnx always produces 24 kHz float samples; clients get 16-bit mono.
RATE = 24000
WIDTH = 2
CHANNELS = 1
# Kokoro reads at most 510 tokens (one per phoneme) and kokoro-onnx cuts a
# longer text off; its own split is at punctuation only. Pieces stay below,
# with room for kokoro-onnx's separators.
MAX_PHONEMES = 500
PHONEME_PAUSES = ".!?;:,—…"


class EngineError(Exception):
    """Kokoro could not be loaded or could not speak (short message)."""


@dataclass(frozen=True)
class Speech:
    """One sentence's audio and the voice that spoke it."""

    voice: Voice
    pcm: bytes  # RATE Hz, WIDTH bytes, CHANNELS channel(s)

    @property
    def seconds(self) -> float:
        """How long the audio plays."""
        return len(self.pcm) / (RATE * WIDTH * CHANNELS)


def load_kokoro(model: Path, voices: Path) -> tuple[Kokoro, dict[str, np.ndarray]]:
    """Load the ONNX model and every style in the voices file."""
    for what, path in (("kokoro.model", model), ("kokoro.voices", voices)):
        if not path.is_file():
            raise EngineError(f"{what}: no such file {path}")
    try:
        kokoro = Kokoro(str(model), str(voices))
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
    """Speaks sentences; all work runs on one worker thread, in arrival order.

    One thread because espeak-ng (phonemes) is not thread-safe and
    onnxruntime already uses every core for one sentence.
    """

    def __init__(self, kokoro: Kokoro, speed: float) -> None:
        self._kokoro = kokoro
        self._speed = speed
        self.phonemizer = Phonemizer(kokoro.tokenizer.vocab)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kokoro")

    async def speak(
        self, sentence: str, voice: Voice | AutoVoice, previous: Voice | None
    ) -> Speech:
        """Synthesise one sentence off the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, self._speak, sentence, voice, previous
        )

    def close(self) -> None:
        """Finish the sentence in progress, drop queued ones, stop the thread."""
        self._executor.shutdown(wait=True, cancel_futures=True)

    def _speak(
        self, sentence: str, voice: Voice | AutoVoice, previous: Voice | None
    ) -> Speech:
        chosen = (
            voice.pick(sentence, previous) if isinstance(voice, AutoVoice) else voice
        )
        try:
            phonemes = self.phonemizer(sentence, chosen.lang)
            parts = []
            for piece in split_phonemes(phonemes):
                audio, rate = self._kokoro.create(
                    piece,
                    chosen.style,
                    speed=self._speed,
                    lang=chosen.lang,
                    is_phonemes=True,
                )
                if rate != RATE:
                    raise EngineError(
                        f"Kokoro produced {rate} Hz audio, expected {RATE}"
                    )
                parts.append(pcm16(audio))
        except EngineError:
            raise
        except Exception as err:  # phonemizer and onnxruntime fail in many ways
            raise EngineError(
                f"Kokoro could not speak {sentence[:40]!r}: {err}"
            ) from None
        return Speech(voice=chosen, pcm=b"".join(parts))


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
