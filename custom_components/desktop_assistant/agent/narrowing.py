"""Which tools a question points to: the branches of a constrained reply.

A small model picks among few branches better than among all, so a
constrained reply offers the tools the question's words point to. A word
points to a tool when it shares its first letters with the tool's name,
description or example questions (a tool file's, in the household's
languages), or with the words people use for Home Assistant's own intents
and tools (`INTENT_WORDS`). A follow-up ("And in Oslo?") adds the previous
question's words. A tool stays a branch after it was called: "the weather
in Rome and in Paris" calls it twice.
"""

from collections.abc import Iterable, Mapping
import re
from typing import Any, Final

from homeassistant.components import conversation

from ..text import ALL_STOP_WORDS, words

# A question's word points to a tool when the two share their first letters
# ("drive" and "Driving time"); a shorter word must match whole.
STEM: Final = 4

# How people ask for Home Assistant's intents and tools, in the six
# languages, by the tool's name without its API's prefix.
INTENT_WORDS: Final[dict[str, str]] = {
    "HassTurnOn": "turn on switch open start "
    "accendi accendere apri attiva aanzetten aan zet open doe "
    "einschalten schalte mach öffne allume allumer ouvre active "
    "enciende encender abre activa pon",
    "HassTurnOff": "turn off switch close stop "
    "spegni spegnere chiudi disattiva uitzetten uit zet dicht doe "
    "ausschalten schalte mach schließe éteins éteindre ferme désactive "
    "apaga apagar cierra desactiva",
    "HassCancelAllTimers": "cancel stop timers "
    "annulla cancella ferma timer annuleer stop timers "
    "abbrechen lösche stoppe Timer annule arrête minuteurs "
    "cancela para temporizadores",
    "HassStartTimer": "timer set start minutes "
    "timer imposta metti minuti timer zet minuten wekker "
    "Timer stelle Minuten Wecker minuteur règle mets minutes "
    "temporizador pon minutos",
    "HassCancelTimer": "cancel stop timer "
    "annulla cancella timer annuleer timer abbrechen Timer "
    "annule minuteur cancela temporizador",
    "GetDateTime": "time date day today hour "
    "ora ore giorno data oggi tijd laat datum dag vandaag "
    "Uhr spät Datum Tag heute Zeit heure date jour aujourd'hui "
    "hora fecha día hoy",
}


def word_set(*lines: str) -> frozenset[str]:
    """The words of lines of words."""
    return frozenset(word for line in lines for word in line.split())


# Words that name a day or a time of day, in the six languages, folded and
# whole (closed-class words: no stems, so "samedi" is not "same"). A
# question that names one points to every tool that takes a date or a time,
# whatever else it says ("Anything on my schedule for Thursday?").
WHEN_WORDS: Final = word_set(
    "now currently moment later today tonight tomorrow yesterday morning",
    "afternoon evening night weekend week month monday tuesday wednesday",
    "thursday friday saturday sunday",
    "adesso ora momento oggi stasera domani dopodomani ieri mattina",
    "pomeriggio sera notte settimana mese lunedi martedi mercoledi giovedi",
    "venerdi sabato domenica",
    "nu straks moment later vandaag vanavond morgen overmorgen gisteren",
    "ochtend middag avond nacht maand maandag dinsdag woensdag donderdag",
    "vrijdag zaterdag zondag",
    "jetzt gerade moment spater heute morgen ubermorgen gestern vormittag",
    "nachmittag abend nacht wochenende woche monat montag dienstag mittwoch",
    "donnerstag freitag samstag sonntag",
    "maintenant actuellement moment tard aujourd demain hier matin midi soir",
    "nuit semaine mois lundi mardi mercredi jeudi vendredi samedi dimanche",
    "ahora momento luego hoy manana ayer tarde noche semana mes lunes martes",
    "miercoles jueves viernes sabado domingo",
)
# A tool takes a date or a time when a parameter's description says so.
DATE_OR_TIME: Final = re.compile(r"YYYY|HH:MM|\btoday\b|\btomorrow\b", re.IGNORECASE)
# Things Home Assistant switches, in the six languages, folded and whole,
# singular and plural: a question that names one points to the intents that
# switch ("Kill the kitchen lights").
DEVICE_WORDS: Final = word_set(
    "light lights lamp lamps fan fans heating heater switch plug socket blinds",
    "shutters curtains cover window tv television radio music speaker",
    "luce luci lampada lampade ventilatore riscaldamento termosifone presa",
    "tapparelle tende porta finestra televisione musica condizionatore",
    "licht lichten lamp lampen ventilator verwarming stopcontact rolluik",
    "gordijnen deur raam televisie muziek airco",
    "lichter lampe heizung steckdose rollladen vorhang tur fenster fernseher",
    "musik klimaanlage",
    "lumiere lumieres ventilateur chauffage prise volets rideaux porte",
    "fenetre tele television musique climatisation",
    "luz luces lampara ventilador calefaccion enchufe persianas cortinas",
    "puerta ventana musica aire",
)
DEVICE_INTENTS: Final = frozenset({"HassTurnOn", "HassTurnOff"})
# The shortest last part of a compound that names what it is about.
COMPOUND_PART: Final = 5

# How a follow-up starts, which carries on the previous question ("And in
# Oslo?", "What about Paris?"), in the six languages; folded words.
FOLLOW_UP_STARTS: Final = tuple(
    start.split()
    for start in (
        "and", "also", "what about", "how about", "e", "ed", "anche", "invece",
        "en", "ook", "und", "auch", "et", "aussi", "y", "tambien",
    )
)  # fmt: skip
# A follow-up is short: at most this many words with a subject.
FOLLOW_UP_SUBJECTS: Final = 3


def stems(text: str) -> set[str]:
    """The beginnings of the words of `text` that carry a subject.

    A tool's name is words too: `calendar_add`, `GetDateTime`.
    """
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])|_", " ", text)
    return {
        word[:STEM]
        for word in words(spaced)
        if len(word) > 2 and word not in ALL_STOP_WORDS
    }


def questions_of(content: Iterable[conversation.Content]) -> list[str]:
    """The person's questions of the conversation, the current one last."""
    return [
        item.content for item in content if isinstance(item, conversation.UserContent)
    ]


def asked_stems(questions: list[str]) -> set[str]:
    """The current question's stems; a follow-up's with the previous question's."""
    if not questions:
        return set()
    asked = stems(questions[-1])
    said = words(questions[-1])
    if (
        len(questions) > 1
        and len(asked) <= FOLLOW_UP_SUBJECTS
        and any(said[: len(start)] == start for start in FOLLOW_UP_STARTS)
    ):
        asked |= stems(questions[-2])
    return asked


def tool_stems(
    tool: Mapping[str, Any], examples: Mapping[str, Iterable[str]]
) -> set[str]:
    """What a tool's words are: its name, description, examples and intent words."""
    function = tool["function"]
    name = function["name"].split("__")[-1]
    texts = [name, function["description"], INTENT_WORDS.get(name, "")]
    texts += examples.get(function["name"], ())
    return set().union(*(stems(text) for text in texts))


def names_one_of(said: Iterable[str], named: frozenset[str]) -> bool:
    """Whether a word is one of `named`, or a compound ending in one.

    Dutch and German join words ("vanmiddag", "Küchenlicht"); a compound's
    last part of five letters or more names what the compound does.
    """
    return any(
        word in named
        or any(word.endswith(part) for part in named if len(part) >= COMPOUND_PART)
        for word in said
    )


def takes_date_or_time(tool: Mapping[str, Any]) -> bool:
    """Whether a parameter of the tool is a date or a time, by its description."""
    parameters = (tool["function"].get("parameters") or {}).get("properties") or {}
    return any(
        DATE_OR_TIME.search(str(schema.get("description", "")))
        for schema in parameters.values()
        if isinstance(schema, Mapping)
    )


def switches(tool: Mapping[str, Any]) -> bool:
    """Whether the tool is one of Home Assistant's intents that switch a device."""
    return tool["function"]["name"].split("__")[-1] in DEVICE_INTENTS


def pointed_tools(
    tools: list[dict[str, Any]],
    questions: list[str],
    examples: Mapping[str, Iterable[str]],
) -> list[dict[str, Any]]:
    """The tools the question's words point to (a follow-up's, its previous one's too).

    `examples` are the example questions of each tool that has them, by the
    tool's name. With none pointed to, the model answers. The prompt still
    lists every tool, so its cached prefix stays the same bytes.
    """
    asked = asked_stems(questions)
    said = set(words(questions[-1])) if questions else set()
    # What the question names, once per question, not once per tool.
    names_when = names_one_of(said, WHEN_WORDS)
    names_device = names_one_of(said, DEVICE_WORDS)
    return [
        tool
        for tool in tools
        if asked & tool_stems(tool, examples)
        or (names_when and takes_date_or_time(tool))
        or (names_device and switches(tool))
    ]
