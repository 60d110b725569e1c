"""Words in and out of the search index: what is indexed, how a query reads.

Plain functions of text, without a database or Home Assistant. The index
(FTS5, `unicode61 remove_diacritics 2`) ignores case and accents; snippets
are found in the stored text with the same folding.
"""

from collections.abc import Iterable, Iterator, Mapping
import re
from typing import Any, Final
import unicodedata

WORD: Final = re.compile(r"\w+")
# Shorter words say too little to search on ("tv", "it", "a").
MIN_WORD: Final = 3
SNIPPET_CONTEXT: Final = 60
MAX_SNIPPETS: Final = 3

# Words that are in most questions and say nothing about a conversation:
# question words, pronouns, auxiliaries, "talk", "conversation", "remember",
# time words (days are the `day`/`from`/`to` parameters), in the languages
# the assistant is used in. Folded (lowercase, no accents), 3 letters or more.
FILLER_WORDS: Final = """
    about after again all also and any are ask asked back been before being
    but can could day days did does doing done earlier for from had has have
    her here him his how its just last like made make may mentioned might
    month more most much must not now off once one only other our out over
    said say she should some something talk talked talking tell than that
    the their them then there these they thing things this those through
    time told too under very was week weeks were what when where which while
    who whom why will with would year yesterday you your conversation
    conversations discussed discuss remember recall today tonight morning
    evening night ago chat chatted speak spoke spoken che chi come cosa con
    dei del della delle dove era erano gli hai hanno abbiamo avevo avete
    fatto detto parlato parlare parlavamo per perche piu quale quando quanto
    quella quello questo questa sono stato stata sei siamo una uno tra fra
    ieri oggi settimana scorsa scorso giorno giorni mese anno ricordi
    ricordo conversazione sul sulla nel nella non mai ancora gia anche het
    een van wat wie waar wanneer hoe waarom die dat deze dit met voor hebben
    heb hadden waren zijn ben gezegd gesproken praten besproken vorige
    gisteren vandaag dag dagen maand jaar onthoud herinner niet ook nog wel
    gesprek ons onze jullie hij zij der das ein eine einen dem den des wer
    wann warum welche welcher mit fur uber von haben hatten hatte habe sind
    bin war gesagt gesprochen sprechen besprochen letzte letzten woche
    gestern heute tag tage monat jahr erinnerst erinnern nicht auch noch
    unser unsere gesprach ihr sie les une que qui quoi quand comment
    pourquoi quel quelle avec pour sur dans avons avez ont avait etait
    etaient parle parler discute derniere dernier semaine hier aujourd hui
    jour jours mois annee souviens rappelle pas aussi encore notre nos vous
    ils elles los las unos unas quien como cuando donde por para sobre hemos
    habia han dicho hablado hablar hablamos ultima ultimo semana ayer hoy
    dia dias mes ano recuerdas recuerda tambien todavia nuestro nuestra
    ustedes ellos ellas conversacion nous wir uns noi voi wij jij woruber
    worover dont nosotros gehad
"""
FILLER: Final = frozenset(FILLER_WORDS.split())


def fold(text: str) -> str:
    """Lowercase without accents, as the index compares words."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words_of(text: str) -> list[str]:
    """The words of a text, folded."""
    return WORD.findall(fold(text))


def search_words(query: str) -> list[str]:
    """The query's words worth searching for: not too short, not filler."""
    seen: dict[str, None] = {}
    for word in words_of(query):
        if len(word) >= MIN_WORD and word not in FILLER:
            seen.setdefault(word)
    return list(seen)


def match_expression(words: Iterable[str], operator: str = "AND") -> str:
    """An FTS5 query: each word as a prefix ("film" finds "films")."""
    return f" {operator} ".join(f'"{word}"*' for word in words)


def argument_values(arguments: Any) -> Iterator[str]:
    """The values inside a tool call's arguments, never their keys."""
    if isinstance(arguments, Mapping):
        for value in arguments.values():
            yield from argument_values(value)
    elif isinstance(arguments, list | tuple):
        for value in arguments:
            yield from argument_values(value)
    elif isinstance(arguments, bool) or arguments is None:
        return
    else:
        yield str(arguments)


def snippets(texts: Iterable[str], words: list[str]) -> list[str]:
    """Short pieces of the texts around the words, at most MAX_SNIPPETS.

    A word matches the start of a text's word, ignoring case and accents,
    as the index matches it.
    """
    found: list[str] = []
    for text in texts:
        folded, origin = _folded_with_origin(text)
        for word in words:
            match = re.search(rf"\b{re.escape(word)}", folded)
            if match is None:
                continue
            start = origin[match.start()]
            end = origin[match.end() - 1] + 1
            found.append(_window(text, start, end))
            break
        if len(found) == MAX_SNIPPETS:
            break
    return found


def _folded_with_origin(text: str) -> tuple[str, list[int]]:
    """The folded text and, for each of its characters, its index in `text`."""
    folded: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        for piece in fold(char):
            folded.append(piece)
            origin.append(index)
    return "".join(folded), origin


def _window(text: str, start: int, end: int) -> str:
    """The match with some context either side, cut at spaces."""
    left = max(0, start - SNIPPET_CONTEXT)
    right = min(len(text), end + SNIPPET_CONTEXT)
    if left > 0 and (space := text.find(" ", left, start)) != -1:
        left = space + 1
    if right < len(text) and (space := text.rfind(" ", end, right)) != -1:
        right = space
    piece = " ".join(text[left:right].split())
    return ("…" if left > 0 else "") + piece + ("…" if right < len(text) else "")
