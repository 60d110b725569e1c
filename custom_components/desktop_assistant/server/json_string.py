r"""A JSON string's text as its pieces arrive: decoded, never a quote or escape.

A constrained reply streams its answer as the JSON text of a string; what a
person hears must be the text that string holds. An escape cut by a chunk
boundary waits for its end; a surrogate pair written as two `\uXXXX`
escapes becomes its one character, and half a pair U+FFFD, which UTF-8 and
every reader downstream can hold.
"""

from dataclasses import dataclass
from typing import Final

SIMPLE_ESCAPES: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")
REPLACEMENT: Final = "\ufffd"


# What unicode_escape returns for text that is no `\uXXXX` escape.
NOT_AN_ESCAPE: Final = -1


def unicode_escape(text: str, start: int) -> int | None:
    r"""The code unit of the `\uXXXX` escape at `start`.

    None when the text ends before the escape does; NOT_AN_ESCAPE when it
    is no such escape.
    """
    piece = text[start : start + 6]
    if not "\\u".startswith(piece[:2]) or not all(c in HEX_DIGITS for c in piece[2:]):
        return NOT_AN_ESCAPE
    if len(piece) < 6:
        return None
    return int(piece[2:], 16)


@dataclass
class JsonStringReader:
    """The text of one JSON string, read from just after its opening quote.

    `feed` returns the text decoded so far that nothing later can change;
    `closed` says the closing quote came, `rest` is what followed it, and
    `broken` says the string is not valid JSON (the reply is unreadable).
    """

    pending: str = ""
    closed: bool = False
    broken: bool = False
    rest: str = ""

    def feed(self, piece: str) -> str:
        """Take the next piece of the JSON text; return the newly decoded text."""
        if self.closed or self.broken:
            self.rest += piece
            return ""
        text = self.pending + piece
        out: list[str] = []
        index = 0
        while index < len(text):
            char = text[index]
            if char == '"':
                self.closed = True
                self.rest = text[index + 1 :]
                self.pending = ""
                return "".join(out)
            if char != "\\":
                out.append(char)
                index += 1
                continue
            decoded, used = self._escape(text, index)
            if used == 0:
                break
            out.append(decoded)
            index += used
        self.pending = text[index:]
        return "".join(out)

    def _escape(self, text: str, start: int) -> tuple[str, int]:
        """The escape at `start`: its text and length; length 0 to wait for more."""
        kind = text[start + 1 : start + 2]
        if kind in SIMPLE_ESCAPES:
            return SIMPLE_ESCAPES[kind], 2
        unit = unicode_escape(text, start) if kind else None
        if unit == NOT_AN_ESCAPE:
            self.broken = True
            return "", len(text) - start
        if unit is None or not 0xD800 <= unit <= 0xDFFF:
            return ("", 0) if unit is None else (chr(unit), 6)
        low = unicode_escape(text, start + 6) if unit <= 0xDBFF else NOT_AN_ESCAPE
        if low is None:
            return "", 0
        if 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), 12
        # Half a surrogate pair.
        return REPLACEMENT, 6
