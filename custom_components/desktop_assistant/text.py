"""How the integration reads words, for every feature: folding, words, stop words.

Plain Python, no Home Assistant and nothing else of the package, so that
`tools/` may use it too: the record's search, memory's names and recall, the
confirmation gate and the tool files' phrases read text the same way.
Folding drops case and accents ("Sì" and "si" are one word); stop words are
kept per language, for the six the assistant speaks.
"""

from collections.abc import Iterable, Mapping
import re
from typing import Any, Final
import unicodedata

LANGUAGES: Final = ("en", "it", "nl", "de", "fr", "es")
_WORD: Final = re.compile(r"\w+")


def fold(text: str) -> str:
    """Return `text` without accents and case; its spaces stay as they are."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    return bare.casefold()


def fold_name(text: str) -> str:
    """Return how two names compare: folded, runs of spaces as one, trimmed."""
    return " ".join(fold(text).split())


def words(text: str) -> list[str]:
    """Return the folded words of `text`; apostrophes and hyphens split words."""
    return _WORD.findall(fold(text))


def language_code(language: str | None, default: str = "en") -> str:
    """Return the primary subtag of a language tag: "it-IT" and "it_IT" are "it"."""
    code = (language or "").replace("_", "-").split("-", 1)[0].lower()
    return code or default


def for_language[T](table: Mapping[str, T], language: str | None) -> T | None:
    """Return the entry of a table keyed by lower-case language tags, if any.

    `en-US` finds `en-us`, else `en`, else any other `en-...` entry.
    """
    if not language or not table:
        return None
    wanted = language.lower().replace("_", "-")
    if (entry := table.get(wanted)) is not None:
        return entry
    primary = language_code(wanted)
    if (entry := table.get(primary)) is not None:
        return entry
    for tag, entry in table.items():
        if language_code(tag, default="") == primary:
            return entry
    return None


def valid_unicode(text: str) -> str:
    """Return `text` with each lone surrogate replaced by U+FFFD.

    A JSON escape of half a surrogate pair decodes to a code point that
    UTF-8 cannot write: SQLite, orjson and aiohttp refuse such text.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def valid_unicode_data(data: Any) -> Any:
    """Return decoded JSON with `valid_unicode` applied to every string in it."""
    if isinstance(data, str):
        return valid_unicode(data)
    if isinstance(data, list):
        return [valid_unicode_data(item) for item in data]
    if isinstance(data, dict):
        return {
            valid_unicode(key): valid_unicode_data(value) for key, value in data.items()
        }
    return data


def _folded_set(entries: Iterable[str]) -> frozenset[str]:
    return frozenset(fold(word) for entry in entries for word in entry.split())


# Words that carry no subject: articles, pronouns, prepositions, question
# words, auxiliaries. Folded; a search of only these finds nothing useful.
STOP_WORDS: Final[dict[str, frozenset[str]]] = {
    "en": _folded_set(
        [
            "a an the and or of to in on at for with by from about after again",
            "all also any are ask asked back been before being but can could did",
            "do does doing done had has have her here him his how is it its just",
            "like made make may me might more most much must my not now off once",
            "one only other our out over said say she should some something tell",
            "than that their them then there these they thing things this those",
            "through too under very was we were what when where which while who",
            "whom why will with would you your know remember recall between into",
            "onto upon during without against among within many few each every",
            "both either neither such same own am get got actually really please",
        ]
    ),
    "it": _folded_set(
        [
            "il lo la i gli le un una uno di da del della delle dei che chi come",
            "cosa con dove era erano hai hanno abbiamo avevo avete fatto detto",
            "per perché più quale quando quanto quella quello questo questa sono",
            "stato stata sei siamo tra fra sul sulla nel nella non mai ancora già",
            "anche mio mia nostro nostra e o su sai noi voi ricordi ricordo è ha",
            "ho può posso puoi devo deve ci ne si mi ti al alla allo ai agli alle",
            "dal dalla nei negli tutto tutti molto poco tanto quanti quante ogni",
        ]
    ),
    "nl": _folded_set(
        [
            "de het een en of van voor met op aan wat wie waar wanneer hoe waarom",
            "die dat deze dit hebben heb hadden waren zijn ben gezegd niet ook nog",
            "wel ons onze jullie hij zij mijn je wij jij gehad onthoud herinner",
            "is was kan kun kunt moet moeten mag wil wilt zal zou word wordt",
            "worden er hier daar alle veel weinig elk elke ieder bij naar tot ik",
            "me mij eens even eigenlijk",
        ]
    ),
    "de": _folded_set(
        [
            "der die das ein eine einen dem den des und oder von zu mit auf wer",
            "wann warum welche welcher wo wie für über haben hatten hatte habe sind",
            "bin war gesagt nicht auch noch mein unser unsere ihr sie wir uns",
            "worüber erinnerst erinnern hat hast sagte ist bist seid kann kannst",
            "muss musst soll will wird werden würde es ich du er im am ins zum zur",
            "vom beim bei um durch gegen ohne viel viele jeder jede alle alles",
            "schon mal eigentlich",
        ]
    ),
    "fr": _folded_set(
        [
            "le la les un une des et ou du au aux qui que quoi quand comment",
            "pourquoi quel quelle avec pour sur dans avons avez ont avait était",
            "étaient pas aussi encore mon ma notre nos vous ils elles nous dont",
            "souviens rappelle dit est sont suis es sommes êtes ai as peut peux",
            "dois doit faut ce cet cette ces il elle je tu on en se me te sa",
            "son ses leur leurs tout tous toute très beaucoup peu chaque entre",
            "chez par sans sous",
        ]
    ),
    "es": _folded_set(
        [
            "el la los las un uno una unos unas y o del al que quien como cuando",
            "donde por para sobre hemos había han dicho también todavía mi",
            "nuestro nuestra ustedes ellos ellas nosotros recuerdas recuerda",
            "dijo dije dijiste es son soy eres está están estoy hay ha he puede",
            "puedo debo debe se me te le les lo su sus muy mucho muchos poco cada",
            "entre sin con hasta desde cuanto cuantos cuanta cuantas cual cuales",
            "este esta esto estos estas ese esa",
        ]
    ),
}

# Words about talking and time, in most questions about a conversation
# ("what did we talk about yesterday?"); the record's search skips them too.
CONVERSATION_WORDS: Final[dict[str, frozenset[str]]] = {
    "en": _folded_set(
        [
            "talk talked talking conversation conversations discussed discuss",
            "mentioned chat chatted speak spoke spoken day days",
            "week weeks month year yesterday today tonight morning evening night",
            "ago earlier last time told",
        ]
    ),
    "it": _folded_set(
        [
            "parlato parlare parlavamo conversazione ieri oggi",
            "settimana scorsa scorso giorno giorni mese anno",
        ]
    ),
    "nl": _folded_set(
        [
            "gesproken praten besproken vorige gisteren vandaag dag dagen maand",
            "jaar gesprek",
        ]
    ),
    "de": _folded_set(
        [
            "gesprochen sprechen besprochen letzte letzten woche gestern heute",
            "tag tage monat jahr gespräch",
        ]
    ),
    "fr": _folded_set(
        [
            "parlé parler discuté dernière dernier semaine hier aujourd hui jour",
            "jours mois année",
        ]
    ),
    "es": _folded_set(
        [
            "hablado hablar hablamos última último semana ayer hoy día días mes",
            "año conversación",
        ]
    ),
}

# Any language's: a household mixes them, and a question's language is a guess.
ALL_STOP_WORDS: Final = frozenset().union(*STOP_WORDS.values())
ALL_CONVERSATION_WORDS: Final = frozenset().union(*CONVERSATION_WORDS.values())


def model_name(model: str) -> str:
    """Return the name a person recognises for a model: its file's stem.

    llama-server lists the path it was started with (`/models/Qwen3-8B.gguf`)
    unless it was given an alias. Empty when the model has no name.
    """
    file_name = re.split(r"[\\/]", model.strip())[-1]
    if file_name.lower().endswith(".gguf"):
        return file_name[: -len(".gguf")]
    return file_name
