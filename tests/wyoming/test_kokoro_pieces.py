"""The pieces a reply is spoken in: a short first piece at a phrase's end
(before a preposition or conjunction, or between a subject and its verb,
never after a pronoun), growing pieces, then clauses; never a word cut,
never a piece without a letter or digit, nothing lost or reordered; text
streamed in any chunks cut where the whole text is. Then the same over
Wyoming with the tiny model: streamed word by word, the first piece is the
one a whole text gives, and its audio comes before the rest is written.
"""

import random

import numpy as np
import pytest
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from tests.harness.wyoming import pcm_of, read_until, tcp_client, tcp_server
from wyoming_services.kokoro.__main__ import KokoroService
from wyoming_services.kokoro.handler import MIN_CLAUSE
from wyoming_services.kokoro.phrasing import (
    FIRST_CHARACTERS,
    FIRST_WORDS,
    RAMPED,
    first_piece_end,
    language_breaks,
)
from wyoming_services.kokoro.splitter import text_pieces

ENGLISH = language_breaks(["en-US"])
REPLY = (
    "It is sunny in Rome today, eighteen degrees with a light breeze from the "
    "sea, and it will stay dry until the evening. "
    "Clouds will roll in around three in the afternoon. "
    "There is a small chance of rain tonight."
)
TEXTS = [
    REPLY,
    "The weather today is sunny and warm with a light breeze.",
    "Oggi a Roma c'è il sole e domani pioverà per tutto il giorno, purtroppo.",
    "Sure, the lights are on. The door is locked.",
    "One moment.",
    "... — !!! 42 ...",
    "Well... — and then, nothing; at all: 3.50 euros, 12:30, e-mail.",
    "Supercalifragilisticexpialidocious" * 3 + " and then some more words.",
    "\u2026 \U0001f600 \u2014",
    "In in in in in in in in in in in in in in in.",
]


def words_only(text: str) -> str:
    return " ".join(text.split())


def check(text: str, pieces: list[str]) -> None:
    """Nothing lost, nothing reordered, no word cut, every piece speakable."""
    if not any(character.isalnum() for character in text):
        assert pieces == []
        return
    # Joined by single spaces, the pieces are the text: a cut inside a word
    # ("sun" "ny") would add a space, a lost or moved piece would show.
    assert words_only(" ".join(pieces)) == words_only(text)
    assert all(any(character.isalnum() for character in p) for p in pieces)
    assert all(p == p.strip() and p for p in pieces)


@pytest.mark.parametrize("text", TEXTS)
def test_pieces_keep_the_text_whole_and_in_order(text: str) -> None:
    check(text, text_pieces(text, language_breaks(["en", "it"]), MIN_CLAUSE))


def test_random_texts_keep_every_rule() -> None:
    """Words, break words, punctuation and symbols in every order."""
    rng = random.Random(21)
    vocabulary = [
        *[
            "sun",
            "rain",
            "Rome",
            "lights",
            "kitchen",
            "door",
            "42",
            "3.50",
            "e-mail",
            "l'acqua",
        ],
        *[
            "and",
            "in",
            "with",
            "that,",
            "because:",
            ";",
            "—",
            "…",
            "...",
            "!",
            "?",
            ".",
            "😀",
            "-",
            "\u2013",
            "'",
            '"',
            "(",
            ")",
        ],
    ]
    for _ in range(500):
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 60)))
        check(text, text_pieces(text, ENGLISH, MIN_CLAUSE))


def test_the_first_piece_is_a_few_words_at_a_phrase_end() -> None:
    assert text_pieces(REPLY, ENGLISH, MIN_CLAUSE)[:4] == [
        "It is sunny",
        "in Rome today,",
        "eighteen degrees",
        "with a light breeze",
    ]
    assert text_pieces(TEXTS[1], ENGLISH, MIN_CLAUSE) == [
        "The weather today",
        "is sunny and warm",
        "with a light breeze.",
    ]
    # No break after a few words: the sentence is not cut early.
    assert text_pieces("Let me check the weather.", ENGLISH, MIN_CLAUSE) == [
        "Let me check the weather."
    ]
    first = text_pieces(REPLY, ENGLISH, MIN_CLAUSE)[0]
    assert len(first.split()) >= FIRST_WORDS and len(first) >= FIRST_CHARACTERS


def test_the_first_piece_of_unfinished_text_waits_for_the_next_word() -> None:
    """ "It is sunny in" may go on as "inside": no cut before a word not whole."""
    assert first_piece_end("It is sunny in", ENGLISH) == 0
    assert first_piece_end("It is sunny in ", ENGLISH) == len("It is sunny ")
    # Word by word, the first piece is where the whole text cuts it.
    written = ""
    for word in REPLY.split(" "):
        written += word + " "
        if end := first_piece_end(written, ENGLISH):
            assert written[:end].strip() == "It is sunny"
            break
    else:
        pytest.fail("no first piece")


# The languages with break words; the `auto` voice adds its voices' up.
LANGUAGES = ["en", "it", "de", "fr", "es", "nl", "pt"]
# A subject of a few words, then its predicate.
SUBJECT_THEN_VERB = [
    ("en", "The capital of Spain", "is Madrid."),
    ("en", "The forecast for Rome", "will be sunny."),
    ("en", "The lights in the kitchen", "will not be on."),
    ("it", "La capitale della Spagna", "è Madrid."),
    ("it", "La porta di casa", "non è chiusa."),
    ("de", "Die Hauptstadt von Spanien", "ist Madrid."),
    ("fr", "La capitale de l'Espagne", "est Madrid."),
    ("fr", "La porte d\u2019entrée", "n\u2019est pas fermée."),
    ("es", "La capital de España", "es Madrid."),
    ("nl", "De hoofdstad van Spanje", "is Madrid."),
    ("pt", "A capital da Espanha", "é Madri."),
]
# A verb after a pronoun, "there" or "here" is said with it.
PRONOUN_THEN_VERB = [
    (
        "en",
        "It is sunny and 21 degrees in Rome today.",
        ["It is sunny", "and 21 degrees", "in Rome today."],
    ),
    ("en", "Today in Rome it is sunny.", ["Today in Rome it is sunny."]),
    ("en", "There are three events tomorrow.", ["There are three events tomorrow."]),
    ("en", "Here is the forecast for Rome.", ["Here is the forecast", "for Rome."]),
    ("it", "Per fortuna lei è a casa.", ["Per fortuna lei è a casa."]),
    (
        "fr",
        "Demain à Paris il sera ensoleillé.",
        ["Demain à Paris il sera ensoleillé."],
    ),
    (
        "es",
        "Mañana en Madrid ella estará en casa.",
        ["Mañana en Madrid ella estará", "en casa."],
    ),
]


@pytest.mark.parametrize(
    ("language", "subject", "predicate"),
    SUBJECT_THEN_VERB,
    ids=[f"{language}: {subject}" for language, subject, _ in SUBJECT_THEN_VERB],
)
@pytest.mark.parametrize(
    "voice_languages", [[], ["en", "it"]], ids=["its voice", "auto with en and it"]
)
def test_a_subject_and_its_verb_are_spoken_as_two_pieces(
    language: str, subject: str, predicate: str, voice_languages: list[str]
) -> None:
    breaks = language_breaks([language, *voice_languages])
    text = f"{subject} {predicate}"
    assert text_pieces(text, breaks, MIN_CLAUSE) == [subject, predicate]
    # A whole text without its full stop is cut there too.
    assert text_pieces(text.rstrip("."), breaks, MIN_CLAUSE)[0] == subject


@pytest.mark.parametrize(
    ("language", "text", "pieces"),
    PRONOUN_THEN_VERB,
    ids=[text for _, text, _ in PRONOUN_THEN_VERB],
)
def test_a_pronoun_and_its_verb_stay_together(
    language: str, text: str, pieces: list[str]
) -> None:
    assert text_pieces(text, language_breaks([language]), MIN_CLAUSE) == pieces


@pytest.mark.parametrize(
    ("language", "text", "pieces"),
    [
        # A subject under three words: no piece of one or two.
        ("en", "Sure, the lights are on.", ["Sure, the lights are on."]),
        ("en", "The door is locked.", ["The door is locked."]),
        ("en", "Paris is the capital of France.", ["Paris is the capital of France."]),
        # A clause's subject goes with its verb, not with the clause before.
        (
            "it",
            "Le luci della cucina sono accese e la porta è chiusa.",
            ["Le luci della cucina", "sono accese", "e la porta è chiusa."],
        ),
        (
            "en",
            "The kitchen lights are on and the front door is locked.",
            ["The kitchen lights", "are on and the front door is locked."],
        ),
        # A verb that ends its clause ends its piece.
        (
            "en",
            "I will check where the remote is.",
            ["I will check", "where the remote is."],
        ),
        (
            "de",
            "Ich sehe, dass die Tür offen ist und das Licht an.",
            ["Ich sehe, dass die Tür offen ist", "und das Licht an."],
        ),
        (
            "en",
            "The capital of Spain is in the centre of the country.",
            ["The capital of Spain is", "in the centre of the country."],
        ),
    ],
)
def test_a_verb_is_cut_before_only_after_a_whole_subject(
    language: str, text: str, pieces: list[str]
) -> None:
    assert text_pieces(text, language_breaks([language]), MIN_CLAUSE) == pieces


def test_a_verb_waits_for_the_word_after_it() -> None:
    """ "is i" may go on as "is in" (a break before "in" instead)."""
    assert first_piece_end("The capital of Spain is", ENGLISH) == 0
    assert first_piece_end("The capital of Spain is i", ENGLISH) == 0
    assert first_piece_end("The capital of Spain is M", ENGLISH) == len(
        "The capital of Spain "
    )
    assert first_piece_end("The capital of Spain is in ", ENGLISH) == len(
        "The capital of Spain is "
    )


def streamed_texts() -> list[str]:
    """The texts above, and random ones of verbs, pronouns and break words."""
    rng = random.Random(43)
    words = "the capital of Spain lights kitchen Rome door Madrid sunny"
    verbs_and_pronouns = "is are will was è ist est es not non it there they il"
    breaks = "and in for with e und que , : . ;"
    vocabulary = f"{words} {verbs_and_pronouns} {breaks}".split()
    return [
        *(f"{subject} {predicate}" for _, subject, predicate in SUBJECT_THEN_VERB),
        *(text for _, text, _ in PRONOUN_THEN_VERB),
        *TEXTS,
        *(
            " ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 16)))
            for _ in range(150)
        ),
    ]


def test_text_streamed_in_any_chunks_is_cut_where_the_whole_is() -> None:
    """Each prefix has no first piece yet, or the whole text's."""
    breaks = language_breaks(LANGUAGES)
    for text in streamed_texts():
        whole = first_piece_end(text, breaks)
        for length in range(1, len(text)):
            assert first_piece_end(text[:length], breaks) in (0, whole), text[:length]
    # A subject streamed without its full stop is the first piece.
    assert first_piece_end("The capital of Spain is Madrid", ENGLISH) == len(
        "The capital of Spain "
    )


def test_auto_cuts_before_a_verb_less_often_never_wrongly() -> None:
    """Dutch "of" is "or": with Dutch among the voices, "The capital of Spain"
    might start a clause, and its verb is not cut before."""
    breaks = language_breaks(["en", "nl"])
    text = "The capital of Spain is Madrid."
    assert text_pieces(text, breaks, MIN_CLAUSE) == [text]


def test_pieces_grow_to_clauses() -> None:
    pieces = text_pieces(REPLY + " " + REPLY, ENGLISH, MIN_CLAUSE)
    # Short pieces first, then once the listener's buffer is ahead, clauses.
    assert max(map(len, pieces[:3])) < RAMPED
    assert "There is a small chance of rain tonight." in pieces


@pytest.mark.parametrize(
    ("written", "first_piece", "then"),
    [
        ("It is sunny in Rome ", "It is sunny", "today."),
        ("The capital of Spain is Madrid,", "The capital of Spain", "of course."),
    ],
)
async def test_streamed_first_piece_is_heard_before_the_rest_is_written(
    kokoro_service: KokoroService,
    socket_enabled: None,
    written: str,
    first_piece: str,
    then: str,
) -> None:
    voice = SynthesizeVoice(name="en")
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(Synthesize(text=first_piece, voice=voice).event())
        alone = pcm_of(await read_until(client, "audio-stop"))

        await client.write_event(SynthesizeStart(voice=voice).event())
        for word in written.split():
            await client.write_event(SynthesizeChunk(text=f"{word} ").event())
        # Nothing more is written until the first piece is heard.
        first = await read_until(client, "audio-stop")
        await client.write_event(SynthesizeChunk(text=then).event())
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")

    assert first[-1].type == "audio-stop"
    # The same piece: its audio is the one-shot's (from the cache, by its text).
    assert np.array_equal(pcm_of(first), alone)
    assert rest[-1].type == "synthesize-stopped"
    assert len(pcm_of(rest)) > 0
