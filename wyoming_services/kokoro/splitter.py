"""Streamed text cut into pieces to speak, in time linear in the text's length.

sentence-stream finds the sentence boundaries, but it searches all the text
it holds each time a chunk arrives, so text without a boundary costs time
quadratic in its length. It is fed slices of bounded size here, and text
held past `MAX_HELD` characters is cut at its last clause or word boundary,
so each chunk costs time bounded by the chunk's own length.
"""

import re

from sentence_stream import SentenceBoundaryDetector

from .phrasing import (
    RAMPED,
    Breaks,
    first_piece_end,
    next_piece_end,
    piece_limit,
)

# What one add_chunk call of the detector looks at, at most.
SLICE = 200
# A sentence longer than this is spoken in parts (a phrase, not a sentence,
# is the unit a listener needs whole). About 30 words.
MAX_HELD = 400
# Sentence punctuation (Latin, ellipsis, CJK), then closing quotes or brackets.
SENTENCE_END = re.compile("[.!?\u2026\u3002\uff01\uff1f][\"'\u2019\u201d)\\]]*\\s*$")
# Where a clause ends: a comma, semicolon, colon or dash, then a space.
CLAUSE_END = re.compile("[,;:\u2013\u2014\u3001]\\s")
# A sentence-end look at the held text needs only its last characters.
TAIL = 16


class TextSplitter:
    """Takes text as it is written; gives the sentences it completes."""

    def __init__(self) -> None:
        self._detector = SentenceBoundaryDetector()

    @property
    def held(self) -> str:
        """The text not given out yet."""
        return self._detector.current_sentence + self._detector.remaining_text

    def add(self, text: str) -> list[str]:
        """Add written text; return the sentences it completed."""
        sentences: list[str] = []
        for start in range(0, len(text), SLICE):
            sentences.extend(self._detector.add_chunk(text[start : start + SLICE]))
            while len(held := self.held) > MAX_HELD:
                sentences.extend(self._cut(held, MAX_HELD))
        return sentences

    def ends_sentence(self) -> bool:
        """The held text ends with sentence punctuation (more may follow)."""
        return bool(SENTENCE_END.search(self.held[-TAIL:]))

    def take_clauses(self, min_characters: int) -> str | None:
        """The held text up to its last clause end, if that much is held."""
        held = self.held
        end = _last_clause_end(held)
        if end < min_characters:
            return None
        return " ".join(self._cut(held, end))

    def take(self, end: int) -> list[str]:
        """The held text's first `end` characters, then any sentences the rest ends."""
        held = self.held
        self._detector.finish()
        return [held[:end].strip(), *self._detector.add_chunk(held[end:])]

    def finish(self) -> str:
        """All the text still held; the splitter is empty afterwards."""
        return self._detector.finish()

    def _cut(self, held: str, limit: int) -> list[str]:
        """Give out `held` up to a boundary at or before `limit`; keep the rest.

        The boundary is the last clause end in the second half, else the last
        space, else `limit` itself.
        """
        head = held[:limit]
        end = _last_clause_end(head)
        if end <= limit // 2:
            end = max(end, head.rfind(" ") + 1) or limit
        self._detector.finish()
        return [held[:end].strip(), *self._detector.add_chunk(held[end:])]


def _last_clause_end(text: str) -> int:
    ends = [match.end() for match in CLAUSE_END.finditer(text)]
    return ends[-1] if ends else 0


def split_text(text: str) -> list[str]:
    """All the sentences of a whole text."""
    splitter = TextSplitter()
    sentences = splitter.add(text)
    if rest := splitter.finish():
        sentences.append(rest)
    return sentences


class Pacer:
    """Cuts a reply's sentences into pieces that keep the listener's buffer full.

    A short first piece at a phrase's end, pieces growing from there (see
    `phrasing`), then clauses. One per request: it counts what was spoken.
    """

    def __init__(self, breaks: Breaks, min_clause: int) -> None:
        self._breaks = breaks
        self._min_clause = min_clause
        self._first: int | None = None  # the first piece's length
        self._spoken = 0  # characters given out

    @property
    def ramped(self) -> bool:
        """Pieces are clauses from now on."""
        return self._first is not None and (
            piece_limit(self._first, self._spoken) >= RAMPED
        )

    def end(self, text: str) -> int:
        """Where the next piece of (possibly unfinished) `text` ends; 0: none.

        Once ramped, 0: the clause rule takes over.
        """
        if self._first is None:
            return first_piece_end(text, self._breaks)
        if self.ramped:
            return 0
        limit = piece_limit(self._first, self._spoken)
        return next_piece_end(text, self._breaks, limit)

    def pieces(self, sentence: str) -> list[str]:
        """A whole sentence cut into the pieces to speak, in order."""
        pieces: list[str] = []
        rest = sentence.strip()
        while rest and (cut := self.end(rest)):
            pieces.append(rest[:cut].strip())
            self.taken(pieces[-1])
            rest = rest[cut:].strip()
        if rest:
            tail = clauses(rest, self._min_clause) if self.ramped else [rest]
            for piece in tail:
                self.taken(piece)
            pieces.extend(tail)
        return pieces

    def taken(self, piece: str) -> None:
        """A piece was given out: the next may grow by it."""
        if self._first is None:
            self._first = len(piece)
        self._spoken += len(piece)


def text_pieces(text: str, breaks: Breaks, min_clause: int) -> list[str]:
    """A whole text's pieces, as a request speaks them."""
    pacer = Pacer(breaks, min_clause)
    pieces = [p for sentence in split_text(text) for p in pacer.pieces(sentence)]
    # A sentence of punctuation alone ("; ...") goes with the one before.
    return speakable_pieces(pieces)


def speakable_pieces(pieces: list[str]) -> list[str]:
    """Pieces without a letter or digit ("...", "—") joined to a neighbour.

    Kokoro cannot speak them alone; a text with no letter or digit at all
    gives no pieces.
    """
    joined: list[str] = []
    pending = ""
    for piece in pieces:
        if not _speakable(piece):
            if joined:
                joined[-1] = f"{joined[-1]} {piece}"
            else:
                pending = f"{pending} {piece}".strip()
            continue
        joined.append(f"{pending} {piece}".strip())
        pending = ""
    return joined


def _speakable(piece: str) -> bool:
    return any(character.isalnum() for character in piece)


def clauses(sentence: str, min_characters: int) -> list[str]:
    """The sentence cut after each clause, no piece shorter than `min_characters`.

    Kokoro takes about as long as the audio lasts on a small machine: spoken
    clause by clause, the first audio comes after the first clause, and
    each next clause is ready before the one playing ends.
    """
    pieces: list[str] = []
    start = 0
    for match in CLAUSE_END.finditer(sentence):
        if match.end() - start >= min_characters:
            pieces.append(sentence[start : match.end()].strip())
            start = match.end()
    rest = sentence[start:].strip()
    if pieces and len(rest) < min_characters:
        pieces[-1] = f"{pieces[-1]} {rest}".strip()
    elif rest:
        pieces.append(rest)
    return pieces
