"""Which voice speaks: by the request's name or language, or `auto`.

The `auto` voice: per sentence, the configured voice of the sentence's language.
"""

from collections.abc import Sequence
import copy
from dataclasses import dataclass
from functools import cache
import logging

from py3langid.langid import MODEL_FILE, LanguageIdentifier
from wyoming.tts import SynthesizeVoice

from .voices import AUTO, Voice, VoiceCatalog

_LOGGER = logging.getLogger(__name__)

# Below this, a sentence ("OK.", "Done!") says too little about its language;
# it keeps the voice of the sentence before it.
MIN_CONFIDENCE = 0.75


@cache
def _model() -> LanguageIdentifier:
    """Load the language model once per process (about a second)."""
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _identifier(languages: Sequence[str]) -> LanguageIdentifier:
    """A copy of the model that only tells `languages` apart."""
    identifier = copy.copy(_model())
    identifier.set_languages(list(languages))
    return identifier


class AutoVoice:
    """Chooses among the configured voices by the language of each sentence."""

    def __init__(self, voices: Sequence[Voice]) -> None:
        self.by_language: dict[str, Voice] = {}
        for voice in voices:
            self.by_language.setdefault(voice.base_language, voice)
        self.default = voices[0]
        self._identifier: LanguageIdentifier | None = None
        if len(self.by_language) < 2:
            return
        labels = set(_model().labels)
        for lang in sorted(self.by_language.keys() - labels):
            _LOGGER.warning(
                "auto: cannot recognise %s, its voice is never chosen", lang
            )
        detectable = sorted(self.by_language.keys() & labels)
        if len(detectable) > 1:
            self._identifier = _identifier(detectable)

    @property
    def languages(self) -> list[str]:
        """The codes of the voices `auto` can choose, for Wyoming's Info."""
        return sorted({voice.language for voice in self.by_language.values()})

    def pick(self, sentence: str, previous: Voice | None) -> Voice:
        """The voice for `sentence`; `previous` is the one the sentence before got."""
        if self._identifier is None:
            return self.default
        language, confidence = self._identifier.classify(sentence)
        if confidence < MIN_CONFIDENCE:
            return previous or self.default
        return self.by_language[language]


class UnknownVoiceError(Exception):
    """The client asked for a voice (or language) this server does not have."""


@dataclass
class Voices:
    """What a handler needs to turn a requested voice into one to speak with."""

    catalog: VoiceCatalog
    auto: AutoVoice | None

    @property
    def names(self) -> list[str]:
        """Every name a client may ask for."""
        return ([AUTO] if self.auto else []) + list(self.catalog.voices)

    def resolve(self, requested: SynthesizeVoice | None) -> Voice | AutoVoice:
        """By name; else by language; else `auto` if configured; else the first."""
        name = requested.name if requested else None
        language = requested.language if requested else None
        if name:
            if name == AUTO and self.auto is not None:
                return self.auto
            if voice := self.catalog.get(name):
                return voice
            raise UnknownVoiceError(
                f"unknown voice {name!r:.60}; available: {', '.join(self.names)}"
            )
        if language:
            if voice := self.catalog.for_language(language):
                return voice
            raise UnknownVoiceError(
                f"no voice speaks {language!r:.60}; available: {', '.join(self.names)}"
            )
        if self.auto is not None:
            return self.auto
        return next(iter(self.catalog.voices.values()))
