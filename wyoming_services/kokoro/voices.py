"""Kokoro voices: the built-in styles, the config's blends, and their languages."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import logging
import re

import numpy as np

from ..config import VoiceSettings

_LOGGER = logging.getLogger(__name__)

AUTO = "auto"

# Kokoro v1.0 names its voices <language letter><f|m>_<name>, e.g. if_sara.
# Letter: (espeak-ng language to phonemize with, code to advertise, name).
PREFIX_LANGUAGES: dict[str, tuple[str, str, str]] = {
    "a": ("en-us", "en-US", "American English"),
    "b": ("en-gb", "en-GB", "British English"),
    "e": ("es", "es", "Spanish"),
    "f": ("fr-fr", "fr-FR", "French"),
    "h": ("hi", "hi", "Hindi"),
    "i": ("it", "it", "Italian"),
    "j": ("ja", "ja", "Japanese"),
    "p": ("pt-br", "pt-BR", "Brazilian Portuguese"),
    "z": ("cmn", "zh-CN", "Mandarin Chinese"),
}
_CODES_BY_ESPEAK = {espeak: code for espeak, code, _ in PREFIX_LANGUAGES.values()}
VOICE_NAME_RE = re.compile(r"^([a-z])[fm]_")


class VoiceError(Exception):
    """A configured voice cannot be built; the message names what is wrong."""


@dataclass(frozen=True, eq=False)
class Voice:
    """A style Kokoro can speak with, and the language it speaks."""

    name: str
    lang: str  # espeak-ng language, for phonemes
    language: str  # BCP 47 code, for Wyoming's Info and for `auto`
    style: np.ndarray  # [rows, 1, 256]
    description: str
    configured: bool

    @property
    def base_language(self) -> str:
        """The language without region: "en" for "en-US"."""
        return base_language(self.language)


def language_code(espeak_lang: str) -> str:
    """Map an espeak-ng language to the code to advertise ("en-us" -> "en-US")."""
    lang = espeak_lang.strip().lower()
    if known := _CODES_BY_ESPEAK.get(lang):
        return known
    first, *rest = re.split(r"[-_]", lang)
    return "-".join([first, *(part.upper() for part in rest)])


def base_language(code: str) -> str:
    """Return the language part of a code ("pt" for "pt-BR")."""
    return re.split(r"[-_]", code)[0].lower()


def prefix_language(style_name: str) -> tuple[str, str, str] | None:
    """The language a built-in voice name's prefix letter stands for."""
    match = VOICE_NAME_RE.match(style_name)
    return PREFIX_LANGUAGES.get(match.group(1)) if match else None


class VoiceCatalog:
    """Every voice a client can ask for: configured blends first, then built-ins."""

    def __init__(
        self, styles: Mapping[str, np.ndarray], configured: Sequence[VoiceSettings]
    ) -> None:
        self.voices: dict[str, Voice] = {}
        for settings in configured:
            self.voices[settings.name] = _blend(settings, styles)
        for name in sorted(styles):
            if name in self.voices:
                continue
            known = prefix_language(name)
            if known is None:
                _LOGGER.warning("voice %s: unknown language letter, not offered", name)
                continue
            lang, code, language_name = known
            self.voices[name] = Voice(
                name=name,
                lang=lang,
                language=code,
                style=styles[name],
                description=f"{name} ({language_name})",
                configured=False,
            )

    @property
    def configured(self) -> list[Voice]:
        """The `[voice.<name>]` voices, in file order."""
        return [voice for voice in self.voices.values() if voice.configured]

    def get(self, name: str) -> Voice | None:
        """The voice called `name`, if there is one."""
        return self.voices.get(name)

    def for_language(self, language: str) -> Voice | None:
        """The first voice for `language`: exact code first, configured first."""
        wanted = language.replace("_", "-").lower()
        voices = list(self.voices.values())
        for voice in voices:
            if voice.language.lower() == wanted:
                return voice
        for voice in voices:
            if voice.base_language == base_language(wanted):
                return voice
        return None


def _blend(settings: VoiceSettings, styles: Mapping[str, np.ndarray]) -> Voice:
    where = f"voice.{settings.name}"
    missing = [style for style in settings.blend if style not in styles]
    if missing:
        raise VoiceError(
            f"{where}.blend: no style named {', '.join(missing)} in the voices file "
            f"(it has: {', '.join(sorted(styles))})"
        )
    shapes = {styles[style].shape for style in settings.blend}
    if len(shapes) != 1:
        raise VoiceError(f"{where}.blend: the styles have different shapes")
    lang = settings.lang
    if lang is None:
        # Without `lang`, the heaviest style's language letter decides.
        heaviest = max(settings.blend, key=lambda style: settings.blend[style])
        known = prefix_language(heaviest)
        if known is None:
            raise VoiceError(
                f"{where}.lang is needed: {heaviest} has no known language"
            )
        lang = known[0]
    style = sum(
        weight * styles[name].astype(np.float32)
        for name, weight in settings.blend.items()
    )
    parts = ", ".join(
        f"{name} {round(weight * 100)}%" for name, weight in settings.blend.items()
    )
    return Voice(
        name=settings.name,
        lang=lang,
        language=language_code(lang),
        style=np.asarray(style, dtype=np.float32),
        description=f"{settings.name} ({language_code(lang)}: {parts})",
        configured=True,
    )
