"""Where a sentence may be cut without an audible break: the ends of phrases.

A speaker pauses after a comma, semicolon, colon or dash, and may pause
before a conjunction, a relative pronoun or most prepositions ("It is sunny
| in Rome today"). The first piece of a reply is cut at the first such break
after a few words, so that its audio comes soon. Each next piece must be
synthesised while the audio before it plays: at a real-time factor r (about
0.6 on two quiet cores) piece k+1 may be as long as the first piece plus
(1 - r) / r of all the pieces before it, `SHARE` here. Pieces grow so, each
at the last break within that length, until they may be clauses. A cut never falls inside a word: a break before a word counts
only once the word is followed by a space or punctuation.
"""

from collections.abc import Iterable
import re

# Words a phrase may start with, by language. Particles of phrasal verbs
# ("turn on the lights") and "of" ("a cup of tea") are left out.
BREAK_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        [
            "and",
            "but",
            "or",
            "so",
            "because",
            "while",
            "when",
            "where",
            "if",
            "that",
            "which",
            "who",
            "whose",
            "with",
            "without",
            "in",
            "at",
            "from",
            "for",
            "to",
            "by",
            "about",
            "until",
            "after",
            "before",
            "since",
            "than",
            "though",
            "although",
            "unless",
            "as",
        ]
    ),
    "it": frozenset(
        [
            "e",
            "ed",
            "ma",
            "o",
            "oppure",
            "perché",
            "che",
            "quando",
            "se",
            "mentre",
            "con",
            "senza",
            "per",
            "in",
            "su",
            "da",
            "tra",
            "fra",
            "fino",
            "dopo",
            "prima",
            "quindi",
            "però",
            "poi",
            "come",
            "dove",
        ]
    ),
    "fr": frozenset(
        [
            "et",
            "mais",
            "ou",
            "donc",
            "car",
            "parce",
            "quand",
            "si",
            "que",
            "qui",
            "avec",
            "sans",
            "pour",
            "dans",
            "sur",
            "depuis",
            "jusqu",
            "après",
            "avant",
            "pendant",
            "puis",
            "comme",
            "où",
        ]
    ),
    "de": frozenset(
        [
            "und",
            "aber",
            "oder",
            "denn",
            "weil",
            "wenn",
            "als",
            "dass",
            "ob",
            "mit",
            "ohne",
            "für",
            "in",
            "auf",
            "bis",
            "nach",
            "vor",
            "seit",
            "während",
            "dann",
            "wie",
            "wo",
        ]
    ),
    "es": frozenset(
        [
            "y",
            "e",
            "pero",
            "o",
            "porque",
            "cuando",
            "si",
            "que",
            "mientras",
            "con",
            "sin",
            "para",
            "en",
            "desde",
            "hasta",
            "después",
            "antes",
            "luego",
            "pues",
            "como",
            "donde",
        ]
    ),
    "nl": frozenset(
        [
            "en",
            "maar",
            "of",
            "want",
            "omdat",
            "als",
            "wanneer",
            "dat",
            "die",
            "met",
            "zonder",
            "voor",
            "in",
            "op",
            "tot",
            "na",
            "sinds",
            "dan",
            "terwijl",
            "waar",
            "hoe",
        ]
    ),
    "pt": frozenset(
        [
            "e",
            "mas",
            "ou",
            "porque",
            "quando",
            "se",
            "que",
            "com",
            "sem",
            "para",
            "em",
            "até",
            "depois",
            "antes",
            "como",
            "onde",
            "enquanto",
        ]
    ),
}
# The first piece: at least this many words and characters ("It is sunny").
FIRST_WORDS = 3
FIRST_CHARACTERS = 10
# A first piece that would run past this is not cut early after all: the
# clause rule decides.
FIRST_LONGEST = 60
# Each next piece at most the first's length plus this share of all before
# it (a real-time factor up to 0.67); from a limit of `RAMPED`, clauses.
SHARE = 0.5
RAMPED = 100
# A word, and what follows it: spaces, or punctuation and spaces.
WORD = re.compile(r"[\w'\u2019-]+")
CLAUSE_MARK = re.compile("[,;:\u2013\u2014\u3001]\\s")


def break_words(languages: Iterable[str]) -> frozenset[str]:
    """The words a phrase may start with in any of `languages` ("en-US" or "en")."""
    words: set[str] = set()
    for language in languages:
        words |= BREAK_WORDS.get(re.split(r"[-_]", language)[0].lower(), frozenset())
    return frozenset(words)


def natural_breaks(text: str, words: frozenset[str]) -> list[int]:
    """Where `text` may be cut: after a clause mark, or before a break word.

    Each is the length of the piece before it; a break before the text's
    last word counts only if that word is followed by something (it is
    whole).
    """
    breaks = {match.end() for match in CLAUSE_MARK.finditer(text)}
    for match in WORD.finditer(text):
        whole = match.end() < len(text)
        if whole and match.start() > 0 and match.group().lower() in words:
            breaks.add(match.start())
    return sorted(cut for cut in breaks if 0 < cut < len(text))


def first_piece_end(text: str, words: frozenset[str]) -> int:
    """Where the first piece ends: the first break after a few words; 0 for none.

    Depends only on the text up to that break and the word after it, so
    text streamed word by word is cut where the whole text would be.
    """
    for cut in natural_breaks(text, words):
        head = text[:cut]
        if len(WORD.findall(head)) >= FIRST_WORDS and len(head.strip()) >= (
            FIRST_CHARACTERS
        ):
            return cut if cut <= FIRST_LONGEST else 0
    return 0


def piece_limit(first: int, spoken: int) -> int:
    """How long the next piece may be after `spoken` characters, `first` the first's."""
    return first + int(SHARE * spoken)


def next_piece_end(text: str, words: frozenset[str], limit: int) -> int:
    """Where the next piece ends: the last break within `limit`, else the first.

    0 if `text` has no break after a few characters.
    """
    breaks = [
        cut
        for cut in natural_breaks(text, words)
        if len(text[:cut].strip()) >= FIRST_CHARACTERS
    ]
    within = [cut for cut in breaks if cut <= limit]
    if within:
        return within[-1]
    return breaks[0] if breaks else 0
