"""Streamed text cut into pieces to speak, in time linear in the text's length.

sentence-stream finds the sentence boundaries, but it searches all the text
it holds each time a chunk arrives, so text without a boundary costs time
quadratic in its length. It is fed slices of bounded size here, and text
held past `MAX_HELD` characters is cut at its last clause or word boundary,
so each chunk costs time bounded by the chunk's own length.
"""

import re

from sentence_stream import SentenceBoundaryDetector

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
