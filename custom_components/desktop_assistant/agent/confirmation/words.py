"""How a person answers the agent's question, and what the agent says around it.

The yes and no of each language as people say them, read into a clear yes,
a clear no or anything else; and the agent's own phrases.
"""

from dataclasses import dataclass
from enum import StrEnum
from functools import cache
import math

from ...text import for_language, words


class Reply(StrEnum):
    """What the person's words say to a question."""

    YES = "yes"
    NO = "no"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Words:
    """The answers of one language as people say them, phrases split by |."""

    yes: str
    no: str
    # Said around an answer without changing it ("yes please").
    polite: str


# A clear answer is made only of these phrases: "yes", "yes please, do it",
# "no thanks". A word outside them ("yes, at eleven") makes it unclear.
WORDS: dict[str, Words] = {
    "en": Words(
        yes="yes|yeah|yep|yup|sure|ok|okay|do it|go ahead|of course|please do|"
        "absolutely|definitely|correct|that's right|right|confirm|confirmed|"
        "alright|all right|fine|sounds good|go for it",
        no="no|nope|nah|don't|do not|don't do it|cancel|stop|never mind|not now|"
        "no way|forget it|negative",
        polite="please|thanks|thank you",
    ),
    "it": Words(
        yes="sì|certo|certamente|va bene|ok|okay|d'accordo|fallo|procedi|vai|"
        "esatto|sicuro|confermo|conferma|perfetto|assolutamente",
        no="no|annulla|lascia stare|lascia perdere|non farlo|niente|per niente|"
        "assolutamente no",
        polite="grazie|per favore|pure",
    ),
    "de": Words(
        yes="ja|jawohl|genau|klar|sicher|okay|ok|mach das|mach es|mach's|gerne|"
        "gern|richtig|in ordnung|bestätigt|los|natürlich|passt",
        no="nein|nö|nee|abbrechen|lass es|lieber nicht|auf keinen fall|stopp|"
        "vergiss es",
        polite="bitte|danke",
    ),
    "fr": Words(
        yes="oui|ouais|d'accord|ok|okay|bien sûr|vas-y|allez-y|fais-le|"
        "exactement|volontiers|c'est bon|parfait|confirme|absolument",
        no="non|annule|annuler|laisse tomber|pas question|surtout pas",
        polite="merci|s'il te plaît|s'il vous plaît",
    ),
    "es": Words(
        yes="sí|vale|claro|de acuerdo|ok|okay|hazlo|adelante|por supuesto|"
        "correcto|venga|dale|perfecto|exacto",
        no="no|cancela|cancelar|déjalo|mejor no|para nada|ni hablar|olvídalo",
        polite="gracias|por favor",
    ),
    "nl": Words(
        yes="ja|jawel|zeker|prima|oké|okay|doe maar|doe het|goed|akkoord|graag|"
        "klopt|natuurlijk|is goed|uiteraard",
        no="nee|neen|annuleer|annuleren|laat maar|liever niet|niet doen|"
        "zeker niet|vergeet het",
        polite="alsjeblieft|alstublieft|dank je|dank u|bedankt",
    ),
}


@dataclass(frozen=True, slots=True)
class Phrases:
    """What the agent says around a confirmation, in one language."""

    # A tool without a confirm question of its own: its name, then arguments.
    generic: str
    generic_with: str
    # After the questions of several calls: one answer for all of them.
    several: str
    # The answer to a no.
    cancelled: str


PHRASES: dict[str, Phrases] = {
    "en": Phrases(
        "Shall I run {tool}?",
        "Shall I run {tool} with {arguments}?",
        "Shall I do all of these?",
        "OK, I won't.",
    ),
    "it": Phrases(
        "Eseguo {tool}?",
        "Eseguo {tool} con {arguments}?",
        "Procedo con tutto?",
        "Va bene, non lo faccio.",
    ),
    "de": Phrases(
        "Soll ich {tool} ausführen?",
        "Soll ich {tool} mit {arguments} ausführen?",
        "Soll ich das alles tun?",
        "Okay, ich lasse es.",
    ),
    "fr": Phrases(
        "Je lance {tool} ?",
        "Je lance {tool} avec {arguments} ?",
        "Je fais tout cela ?",
        "D'accord, je ne le fais pas.",
    ),
    "es": Phrases(
        "¿Ejecuto {tool}?",
        "¿Ejecuto {tool} con {arguments}?",
        "¿Lo hago todo?",
        "Vale, no lo hago.",
    ),
    "nl": Phrases(
        "Zal ik {tool} uitvoeren?",
        "Zal ik {tool} uitvoeren met {arguments}?",
        "Zal ik dit allemaal doen?",
        "Oké, ik doe het niet.",
    ),
}


def _phrases(entries: str) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(words(entry)) for entry in entries.split("|"))


@dataclass(frozen=True, slots=True)
class _Matcher:
    yes: frozenset[tuple[str, ...]]
    no: frozenset[tuple[str, ...]]
    polite: frozenset[tuple[str, ...]]


MATCHERS = {
    language: _Matcher(_phrases(w.yes), _phrases(w.no), _phrases(w.polite))
    for language, w in WORDS.items()
}


def classify(text: str, language: str | None) -> Reply:
    """Return whether the words are a clear yes, a clear no, or anything else.

    Clear means the words are made of answer phrases only, all of one kind
    once read in the fewest phrases: "yes, please do it" is a yes, "don't do
    it" a no, "yes no" neither. The conversation's language decides which
    phrases count; a language without a word list uses English's.
    """
    matcher = for_language(MATCHERS, language) or MATCHERS["en"]
    utterance = tuple(words(text))
    kinds = (
        (Reply.YES, matcher.yes),
        (Reply.NO, matcher.no),
        (None, matcher.polite),
    )

    @cache
    def readings(position: int) -> tuple[float, frozenset[frozenset[Reply]]]:
        """Return the fewest phrases reading the words from `position` on.

        With the count (infinity when nothing reads them) come the answers
        of each reading with that count.
        """
        if position == len(utterance):
            return 0, frozenset({frozenset()})
        fewest: float = math.inf
        answers: set[frozenset[Reply]] = set()
        for reply, phrases in kinds:
            for phrase in phrases:
                if utterance[position : position + len(phrase)] != phrase:
                    continue
                count, rests = readings(position + len(phrase))
                if count + 1 > fewest:
                    continue
                if count + 1 < fewest:
                    fewest, answers = count + 1, set()
                reading = frozenset({reply} if reply else ())
                answers.update(reading | rest for rest in rests)
        return fewest, frozenset(answers)

    count, answers = readings(0)
    if count == math.inf or len(answers) != 1:
        return Reply.OTHER
    (replies,) = answers
    return next(iter(replies)) if len(replies) == 1 else Reply.OTHER


def phrases_for(language: str | None) -> Phrases:
    """Return the agent's phrases in a language, English when it has none."""
    return for_language(PHRASES, language) or PHRASES["en"]
