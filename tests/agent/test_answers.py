"""Reading a person's answer: a clear yes, a clear no, or anything else."""

import pytest

from custom_components.desktop_assistant.agent.confirmation.words import (
    PHRASES,
    WORDS,
    Reply,
    classify,
)
from custom_components.desktop_assistant.text import words

YES, NO, OTHER = Reply.YES, Reply.NO, Reply.OTHER

CASES = [
    # English, as speech-to-text writes it.
    ("en", "Yes.", YES),
    ("en", " yeah ", YES),
    ("en", "Sure, go ahead!", YES),
    ("en", "OK", YES),
    ("en", "Okay, thanks.", YES),
    ("en", "Yes please, do it.", YES),
    ("en", "That's right.", YES),
    ("en", "No.", NO),
    ("en", "No, thank you.", NO),
    ("en", "Don't do it!", NO),
    ("en", "Never mind", NO),
    ("en", "cancel", NO),
    ("en", "Yes, but at eleven.", OTHER),
    ("en", "Yes. No.", OTHER),
    ("en", "What's the weather?", OTHER),
    ("en", "yesterday", OTHER),
    ("en", "Yeast", OTHER),
    ("en", "please", OTHER),
    ("en", "", OTHER),
    ("en-US", "yep", YES),
    # Italian: accents or not, as the transcription comes.
    ("it", "Sì.", YES),
    ("it", "si", YES),
    ("it", "Sì, va bene, grazie!", YES),
    ("it", "Certo", YES),
    ("it", "D'accordo.", YES),
    ("it", "Fallo pure", YES),
    ("it", "No, lascia stare.", NO),
    ("it", "No grazie", NO),
    ("it", "Sì, ma alle undici", OTHER),
    ("it", "Che tempo fa?", OTHER),
    ("it", "yes", OTHER),
    ("de", "Ja, bitte.", YES),
    ("de", "Mach das", YES),
    ("de", "In Ordnung", YES),
    ("de", "Nein, danke", NO),
    ("de", "Lieber nicht.", NO),
    ("fr", "Oui", YES),
    ("fr", "D'accord, vas-y !", YES),
    ("fr", "Bien sûr", YES),
    ("fr", "Non merci", NO),
    ("fr", "Laisse tomber.", NO),
    ("es", "Sí, claro.", YES),
    ("es", "Vale", YES),
    ("es", "De acuerdo, hazlo", YES),
    ("es", "No, gracias", NO),
    ("es", "Mejor no", NO),
    ("nl", "Ja, graag.", YES),
    ("nl", "Doe maar", YES),
    ("nl", "Oké", YES),
    ("nl", "Nee, laat maar.", NO),
    ("nl", "Liever niet", NO),
    # A language without word lists reads English ones.
    ("pt", "yes", YES),
    (None, "no", NO),
]


@pytest.mark.parametrize(("language", "text", "expected"), CASES)
def test_classify(language: str | None, text: str, expected: Reply) -> None:
    assert classify(text, language) is expected


def test_words_ignore_case_accents_and_punctuation() -> None:
    assert words("Sì!  D'accord, «vas-y»…") == ["si", "d", "accord", "vas", "y"]


def test_every_language_has_words_and_phrases() -> None:
    assert set(WORDS) == set(PHRASES) == {"en", "it", "de", "fr", "es", "nl"}
    for language, word_lists in WORDS.items():
        yes = {tuple(words(phrase)) for phrase in word_lists.yes.split("|")}
        no = {tuple(words(phrase)) for phrase in word_lists.no.split("|")}
        assert not yes & no, language
        assert PHRASES[language].generic.endswith("?")
        assert PHRASES[language].generic_with.endswith("?")
        assert PHRASES[language].several.endswith("?")
