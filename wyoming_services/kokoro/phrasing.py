"""Where a sentence may be cut without an audible break: the ends of phrases.

A speaker pauses after a comma, semicolon, colon or dash, and may pause
before a conjunction, a relative pronoun or most prepositions ("It is sunny
| in Rome today"), and between a subject of a few words and its predicate
("The capital of Spain | is Madrid"), but not after a pronoun ("It is",
"there are"). The first piece of a reply is cut at the first such break
after a few words, so that its audio comes soon. Each next piece must be
synthesised while the audio before it plays: at a real-time factor r (about
0.6 on two quiet cores) piece k+1 may be as long as the first piece plus
(1 - r) / r of all the pieces before it, `SHARE` here. Pieces grow so, each
at the last break within that length, until they may be clauses. A cut
never falls inside a word: a break before a word counts only once the word
is followed by a space or punctuation.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Breaks:
    """Where a language's phrases start; `|` adds languages up."""

    # Conjunctions and relative pronouns: a clause starts with them, and its
    # subject goes with its verb ("and the door is locked").
    clause_starts: frozenset[str] = frozenset()
    # Prepositions, but not particles of phrasal verbs ("turn on the
    # lights") nor "of" ("a cup of tea").
    prepositions: frozenset[str] = frozenset()
    # Copulas, auxiliaries and negations that start a predicate after its
    # subject ("The forecast for Rome | will be sunny").
    predicate_verbs: frozenset[str] = frozenset()
    # Pronouns and the like, after which a predicate verb is no break: "it
    # is", "there are" are said as one.
    pronouns: frozenset[str] = frozenset()

    def __or__(self, other: "Breaks") -> "Breaks":
        return Breaks(
            self.clause_starts | other.clause_starts,
            self.prepositions | other.prepositions,
            self.predicate_verbs | other.predicate_verbs,
            self.pronouns | other.pronouns,
        )

    @cached_property
    def phrase_starts(self) -> frozenset[str]:
        """The words a phrase starts with: a break comes before them."""
        return self.clause_starts | self.prepositions


# The `auto` voice adds its languages up. A word that starts a clause in one
# (Dutch "of": or) keeps another's verb from being cut before, a cut less; a
# verb in one that is another word in the other (Spanish "son") may cut
# there, so the most common ones are left out: French "a" (has) is "a",
# "to" or "the" in the others.
BREAKS: dict[str, Breaks] = {
    "en": Breaks(
        clause_starts=_words(
            "and but or so because while when where if that which who whose "
            "until after before since than though although unless as"
        ),
        prepositions=_words("with without in at from for to by about"),
        predicate_verbs=_words(
            "is are was were will would can could should shall must might has have "
            "had do does did isn't aren't wasn't weren't won't wouldn't can't "
            "couldn't shouldn't hasn't haven't hadn't don't doesn't didn't"
        ),
        pronouns=_words(
            "i you he she it we they me him her us them this these those there here "
            "what whom one everything something anything nothing everyone someone "
            "anyone nobody"
        ),
    ),
    "it": Breaks(
        clause_starts=_words(
            "e ed ma o oppure perché che quando se mentre quindi però poi come dove"
        ),
        prepositions=_words("con senza per in su da tra fra fino dopo prima"),
        predicate_verbs=_words(
            "è sono era erano sarà saranno sarebbe sarebbero ha hanno aveva "
            "avevano avrà avranno può possono potrebbe deve devono dovrebbe sta "
            "stanno non"
        ),
        pronouns=_words(
            "io tu lui lei noi voi loro esso essa essi esse questo questa questi "
            "queste quello quella quelli quelle ciò qui qua lì là chi cosa mi ti ci "
            "vi si lo la li le gli ne"
        ),
    ),
    "fr": Breaks(
        clause_starts=_words(
            "et mais ou donc car parce quand si que qui puis comme où"
        ),
        prepositions=_words("avec sans pour dans sur depuis jusqu après avant pendant"),
        predicate_verbs=_words(
            "est sont était étaient sera seront serait seraient ont avait avaient "
            "aura auront va vont peut peuvent doit doivent ne n'est n'était n'a "
            "n'ont n'avait n'avaient"
        ),
        pronouns=_words(
            "je tu il elle on nous vous ils elles ce ceci cela ça celui celle ceux "
            "celles me te se le la les lui leur y en ici là quoi"
        ),
    ),
    "de": Breaks(
        clause_starts=_words("und aber oder denn weil wenn als dass ob dann wie wo"),
        prepositions=_words("mit ohne für in auf bis nach vor seit während"),
        predicate_verbs=_words(
            "ist sind war waren wird werden wurde wurden hat haben hatte hatten "
            "kann können muss müssen soll sollte sollten würde würden darf bleibt"
        ),
        pronouns=_words(
            "ich du er sie es wir ihr man das dies diese dieser dieses der die den "
            "dem da hier dort was wer mir dir ihm ihn uns euch ihnen sich"
        ),
    ),
    "es": Breaks(
        clause_starts=_words(
            "y e pero o porque cuando si que mientras luego pues como donde"
        ),
        prepositions=_words("con sin para en desde hasta después antes"),
        predicate_verbs=_words(
            "es son era eran fue fueron será serán sería está están estaba "
            "estaban estará estarán ha han había habrá tiene tienen va van puede "
            "pueden debe deben no"
        ),
        pronouns=_words(
            "yo tú él ella usted nosotros nosotras vosotros vosotras ellos ellas "
            "ustedes esto eso aquello este esta ese esa aquí allí ahí allá quien "
            "quién qué me te se lo la le los las les nos os"
        ),
    ),
    "nl": Breaks(
        clause_starts=_words(
            "en maar of want omdat als wanneer dat die dan terwijl waar hoe"
        ),
        prepositions=_words("met zonder voor in op tot na sinds"),
        predicate_verbs=_words(
            "is zijn was waren wordt worden werd werden heeft hebben had hadden zal "
            "zullen zou zouden kan kunnen moet moeten blijft"
        ),
        pronouns=_words(
            "ik je jij u hij zij ze het we wij jullie men dit deze er hier daar wat "
            "wie me mij hem haar ons hen hun zich"
        ),
    ),
    "pt": Breaks(
        clause_starts=_words("e mas ou porque quando se que como onde enquanto"),
        prepositions=_words("com sem para em até depois antes"),
        predicate_verbs=_words(
            "é são era eram foi foram será serão seria está estão estava estavam "
            "estará estarão tem têm tinha terá vai vão pode podem deve devem não"
        ),
        pronouns=_words(
            "eu tu você ele ela nós vós vocês eles elas isto isso aquilo este esta "
            "esse essa aqui ali aí lá quem o a os as me te lhe lhes nos vos"
        ),
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


def language_breaks(languages: Iterable[str]) -> Breaks:
    """The breaks of any of `languages` ("en-US" or "en")."""
    breaks = Breaks()
    for language in languages:
        breaks |= BREAKS.get(re.split(r"[-_]", language)[0].lower(), Breaks())
    return breaks


def natural_breaks(text: str, breaks: Breaks) -> list[int]:
    """Where `text`, from a piece's start, may be cut: at a phrase's end.

    After a clause mark, or before a phrase start or a predicate verb. Each
    is the length of the piece before it; a break before a word counts
    only if that word is followed by something (it is whole).
    """
    cuts = {match.end() for match in CLAUSE_MARK.finditer(text)}
    words = list(WORD.finditer(text))
    for index, word in enumerate(words):
        if _starts_phrase(text, words, index, breaks) or _starts_predicate(
            text, words, index, breaks
        ):
            cuts.add(word.start())
    return sorted(cut for cut in cuts if 0 < cut < len(text))


def _starts_phrase(
    text: str, words: list[re.Match[str]], index: int, breaks: Breaks
) -> bool:
    """Word `index` is a phrase start, not the text's first, and whole."""
    word = words[index]
    return index > 0 and word.end() < len(text) and _key(word) in breaks.phrase_starts


def _starts_predicate(
    text: str, words: list[re.Match[str]], index: int, breaks: Breaks
) -> bool:
    """Word `index` is a predicate verb after a subject of a few words.

    The subject runs from the piece's start or its last clause mark, starts
    no clause ("sono accese e la porta | è" would join two) and ends in no
    pronoun ("it | is"). A word follows the verb directly that starts no
    phrase: "... the remote is." and "... offen ist und ..." end a clause.
    """
    if index + 1 == len(words) or _key(words[index]) not in breaks.predicate_verbs:
        return False
    verb, following = words[index], words[index + 1]
    subject = _subject(text, words, index)
    return (
        len(subject) >= FIRST_WORDS
        and not any(_key(word) in breaks.clause_starts for word in subject)
        and _key(subject[-1]) not in breaks.pronouns
        and _key(subject[-1]) not in breaks.predicate_verbs  # "will | be"
        and text[verb.end() : following.start()].isspace()
        and not _may_start_phrase(text, following, breaks)
    )


def _subject(text: str, words: list[re.Match[str]], index: int) -> list[re.Match[str]]:
    """The words before word `index`, from the text's start or its last clause mark."""
    marks = CLAUSE_MARK.finditer(text, 0, words[index].start())
    start = max((mark.end() for mark in marks), default=0)
    return [word for word in words[:index] if word.start() >= start]


def _may_start_phrase(text: str, word: re.Match[str], breaks: Breaks) -> bool:
    """`word` starts a phrase, or, unfinished at the text's end, may yet."""
    key = _key(word)
    if word.end() < len(text):
        return key in breaks.phrase_starts
    return any(start.startswith(key) for start in breaks.phrase_starts)


def _key(word: re.Match[str]) -> str:
    """How a word is looked up: lower case, with a straight apostrophe."""
    return word.group().lower().replace("\u2019", "'")


def first_piece_end(text: str, breaks: Breaks) -> int:
    """Where the first piece ends: the first break after a few words; 0 for none.

    Depends only on the text up to that break and the two words after it,
    so text streamed word by word is cut where the whole text would be.
    """
    for cut in natural_breaks(text, breaks):
        head = text[:cut]
        if len(WORD.findall(head)) >= FIRST_WORDS and len(head.strip()) >= (
            FIRST_CHARACTERS
        ):
            return cut if cut <= FIRST_LONGEST else 0
    return 0


def piece_limit(first: int, spoken: int) -> int:
    """How long the next piece may be after `spoken` characters, `first` the first's."""
    return first + int(SHARE * spoken)


def next_piece_end(text: str, breaks: Breaks, limit: int) -> int:
    """Where the next piece ends: the last break within `limit`, else the first.

    0 if `text` has no break after a few characters.
    """
    cuts = [
        cut
        for cut in natural_breaks(text, breaks)
        if len(text[:cut].strip()) >= FIRST_CHARACTERS
    ]
    within = [cut for cut in cuts if cut <= limit]
    if within:
        return within[-1]
    return cuts[0] if cuts else 0
