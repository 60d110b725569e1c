"""The language a question is in, among the languages a household speaks.

The Assist pipeline gives its own language with every question, whatever the
person spoke. py3langid, restricted to the household's languages, decides
from the text; the pipeline's language stays when the text is too short to
tell or the detector is unsure.
"""

from collections.abc import Iterable
import copy
from functools import cache
import logging

from py3langid.langid import MODEL_FILE, LanguageIdentifier

from ..text import language_code

_LOGGER = logging.getLogger(__name__)

# py3langid's languages (its `zxx`, "no linguistic content", left out).
DETECTABLE_LANGUAGES = (
    "ace", "af", "am", "an", "ar", "ary", "arz", "as", "az", "ba", "bcl", "be",
    "bg", "bn", "br", "bs", "ca", "crh", "cs", "cy", "da", "de", "dz", "el", "en",
    "eo", "es", "et", "eu", "ext", "fa", "fi", "fo", "fr", "fuv", "fy", "ga", "gcf",
    "gcr", "gd", "gl", "gom", "grc", "gu", "gug", "guw", "ha", "hbo", "he", "hi",
    "hr", "ht", "hu", "hy", "id", "ig", "is", "it", "ja", "jv", "ka", "kab", "kik",
    "kk", "km", "kn", "ko", "ku", "ky", "la", "lb", "lg", "lij", "ln", "lo", "lt",
    "ltg", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "mt", "my", "ne", "nl", "nn",
    "no", "nso", "oc", "om", "or", "pa", "pcm", "pl", "ps", "pt", "qu", "ro", "ru",
    "rw", "sa", "sdh", "se", "si", "sk", "sl", "sn", "so", "sq", "sr", "st", "sv",
    "sw", "ta", "te", "tg", "th", "tk", "tl", "tr", "tt", "ug", "uk", "ur", "uz",
    "uzs", "vec", "vi", "vo", "wa", "wuu", "xh", "yo", "yue", "zh", "zu",
)  # fmt: skip

# Fewer words than this ("Ciao Roma", "Stop") say too little about their
# language; so does a verdict less sure than MIN_CONFIDENCE (among the
# household's languages, so 0.5 is a coin toss between two).
MIN_WORDS = 3
MIN_CONFIDENCE = 0.8


@cache
def _model() -> LanguageIdentifier:
    """Load py3langid's model once per process (about a second: executor only)."""
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


class LanguageDetector:
    """Tells which of the household's languages a question is in.

    Building one loads the model: do it off the event loop. `detect` then
    takes a fraction of a millisecond (benchmarks/language_detect.py).
    """

    def __init__(self, languages: Iterable[str]) -> None:
        """Keep the household's languages py3langid knows, by primary subtag."""
        self.languages: dict[str, str] = {}
        for language in languages:
            if language_code(language) in DETECTABLE_LANGUAGES:
                self.languages.setdefault(language_code(language), language)
            else:
                _LOGGER.warning("Cannot recognise the language %s; ignored", language)
        self._identifiers: dict[frozenset[str], LanguageIdentifier] = {}
        # Ready for the usual case, the pipeline speaking one of them; the
        # first classification is the slowest, so it is not a question's.
        if len(self.languages) > 1:
            self._identifier(frozenset(self.languages)).classify("warm up")

    def _identifier(self, candidates: frozenset[str]) -> LanguageIdentifier:
        """A copy of the model that only tells `candidates` apart."""
        if (identifier := self._identifiers.get(candidates)) is None:
            identifier = copy.copy(_model())
            identifier.set_languages(sorted(candidates))
            self._identifiers[candidates] = identifier
        return identifier

    def detect(self, text: str, pipeline_language: str) -> str:
        """Return the language `text` is in, or `pipeline_language` if unsure.

        The pipeline's language is always a candidate; a verdict for it keeps
        the pipeline's exact code (`en-GB`), another the household's code.
        """
        pipeline_primary = language_code(pipeline_language)
        candidates = frozenset(self.languages) | {pipeline_primary}
        candidates &= frozenset(DETECTABLE_LANGUAGES)
        if len(candidates) < 2 or len(text.split()) < MIN_WORDS:
            return pipeline_language
        language, confidence = self._identifier(candidates).classify(text)
        if confidence < MIN_CONFIDENCE or language == pipeline_primary:
            return pipeline_language
        return self.languages[language]
