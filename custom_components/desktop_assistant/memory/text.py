"""Text rules of memory pages, plain Python: names, lines, notes, words.

No Home Assistant or database import, so the plan checks and the page store
share one definition of "the same name" and "the same line".
"""

from collections.abc import Iterator
import math
import re

from ..const import CHARS_PER_TOKEN
from ..text import fold_name

NOTES_HEADING = "## Notes"
PROFILE = "profile"

_SPACE = re.compile(r"\s+")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_NOTE_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}:\s*")
# A sentence ends at . ! ? or ; followed by a space.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|([^\[\]]+))?\]\]")


def tokens(text: str) -> int:
    """Return the estimated token count of `text`."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def leading_fit(items: list[str], chars: int, separator: int) -> list[str]:
    """The first items that fit in `chars` characters, each followed by `separator`."""
    kept: list[str] = []
    for item in items:
        if len(item) + separator > chars:
            break
        kept.append(item)
        chars -= len(item) + separator
    return kept


def content_lines(text: str) -> list[str]:
    """Return the lines that carry content: not blank, not headings."""
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def line_key(line: str) -> str:
    """Return what must survive of a line: folded, without list mark and links.

    A note's date goes too: folding a note into the text keeps its fact.
    """
    line = _NOTE_DATE.sub("", _LIST_MARK.sub("", line))
    line = _LINK.sub(lambda match: match.group(2) or match.group(1), line)
    return fold_name(line).rstrip(" .;,")


def sentence_keys(line: str) -> list[str]:
    """Return the keys of a line's sentences, each as `line_key` makes it."""
    return [key for part in _SENTENCE_END.split(line) if (key := line_key(part))]


def links(text: str) -> list[str]:
    """Return the page names `text` links to with [[name]] or [[name|label]]."""
    return [match.group(1).strip() for match in _LINK.finditer(text)]


def unlink(text: str, names: set[str]) -> str:
    """Return `text` with links to any of the folded `names` turned to plain text."""

    def plain(match: re.Match[str]) -> str:
        if fold_name(match.group(1)) in names:
            return match.group(2) or match.group(1)
        return match.group(0)

    return _LINK.sub(plain, text)


def note_line(day: str, fact: str) -> str:
    """Return a dated note as it is written under ## Notes."""
    return f"- {day}: {_SPACE.sub(' ', fact).strip()}"


def add_note(text: str, line: str) -> str:
    """Return `text` with `line` appended under ## Notes (added when missing)."""
    lines = text.rstrip("\n").splitlines()
    try:
        start = next(i for i, item in enumerate(lines) if item.strip() == NOTES_HEADING)
    except StopIteration:
        prefix = "\n".join(lines)
        return f"{prefix}\n\n{NOTES_HEADING}\n{line}\n".lstrip("\n")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("#")),
        len(lines),
    )
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    lines.insert(end, line)
    return "\n".join(lines) + "\n"


def notes(text: str) -> Iterator[str]:
    """Yield the lines under ## Notes."""
    inside = False
    for line in text.splitlines():
        if line.startswith("#"):
            inside = line.strip() == NOTES_HEADING
        elif inside and line.strip():
            yield line.strip()


def hint(text: str, width: int = 80) -> str:
    """Return the first content line of `text`, cut to `width` characters."""
    for line in content_lines(text):
        bare = _LIST_MARK.sub("", line)
        return bare if len(bare) <= width else bare[: width - 1].rstrip() + "…"
    return ""
