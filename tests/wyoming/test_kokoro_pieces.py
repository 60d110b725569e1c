"""The pieces a reply is spoken in: a short first piece at a phrase's end,
growing pieces, then clauses; never a word cut, never a piece without a
letter or digit, nothing lost or reordered. Then the same over Wyoming with
the tiny model: streamed word by word, the first piece is the one a whole
text gives, and its audio comes before the rest is written.
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
    break_words,
    first_piece_end,
)
from wyoming_services.kokoro.splitter import text_pieces

ENGLISH = break_words(["en-US"])
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
    check(text, text_pieces(text, ENGLISH | break_words(["it"]), MIN_CLAUSE))


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
        "The weather today is sunny",
        "and warm with a light breeze.",
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


def test_pieces_grow_to_clauses() -> None:
    pieces = text_pieces(REPLY + " " + REPLY, ENGLISH, MIN_CLAUSE)
    # Short pieces first, then once the listener's buffer is ahead, clauses.
    assert max(map(len, pieces[:3])) < RAMPED
    assert "There is a small chance of rain tonight." in pieces


async def test_streamed_first_piece_is_heard_before_the_rest_is_written(
    kokoro_service: KokoroService, socket_enabled: None
) -> None:
    voice = SynthesizeVoice(name="en")
    async with (
        tcp_server(kokoro_service.handler_factory) as port,
        tcp_client(port) as client,
    ):
        await client.write_event(Synthesize(text="It is sunny", voice=voice).event())
        alone = pcm_of(await read_until(client, "audio-stop"))

        await client.write_event(SynthesizeStart(voice=voice).event())
        for word in ["It", "is", "sunny", "in", "Rome"]:
            await client.write_event(SynthesizeChunk(text=f"{word} ").event())
        # Nothing more is written until the first piece is heard.
        first = await read_until(client, "audio-stop")
        await client.write_event(SynthesizeChunk(text="today.").event())
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")

    assert first[-1].type == "audio-stop"
    # The same piece: its audio is the one-shot's (from the cache, by its text).
    assert np.array_equal(pcm_of(first), alone)
    assert rest[-1].type == "synthesize-stopped"
    assert len(pcm_of(rest)) > 0
