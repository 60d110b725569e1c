"""Words in and out of the search index: what is indexed, how a query reads.

Plain functions of text, without a database or Home Assistant. The index
(FTS5, `unicode61 remove_diacritics 2`) ignores case and accents; snippets
are found in the stored text with the same folding.
"""

from collections.abc import Iterable, Iterator, Mapping
import re
from typing import Any, Final

from ..text import ALL_CONVERSATION_WORDS, ALL_STOP_WORDS, fold, words

# Shorter words say too little to search on ("tv", "it", "a").
MIN_WORD: Final = 3
# More words make a slow query (each one a prefix scan of the index) and
# say no more about a conversation.
MAX_WORDS: Final = 12
SNIPPET_CONTEXT: Final = 60
MAX_SNIPPETS: Final = 3

# Words that are in most questions and say nothing about a conversation.
FILLER: Final = ALL_STOP_WORDS | ALL_CONVERSATION_WORDS


def search_words(query: str) -> list[str]:
    """The query's words worth searching for: not too short, not filler."""
    seen: dict[str, None] = {}
    for word in words(query):
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
