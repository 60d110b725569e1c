"""Keep [env] values and API keys out of what a tool returns."""

from collections.abc import Iterable
import json
import re
import urllib.parse

MASK = "***"
# Shorter values are left alone: no key or password is that short, and
# replacing `8` or `Ciao` everywhere would garble the answers.
MIN_LENGTH = 6


PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def written_forms(secret: str) -> set[str]:
    """The ways a program writes a value: as is, URL-encoded, in a JSON string."""
    quoted = {
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote(secret),
        urllib.parse.quote_plus(secret),
    }
    quoted |= {PERCENT_ESCAPE.sub(lambda m: m[0].lower(), form) for form in quoted}
    in_json = {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    # Some JSON writers (PHP's) escape "/" too.
    in_json |= {form.replace("/", "\\/") for form in in_json}
    return {secret, *quoted, *in_json}


class Redactor:
    """Replaces every secret, in each of its written forms, by `***`."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = {
            form
            for secret in secrets
            if len(secret) >= MIN_LENGTH
            for form in written_forms(secret)
        }
        # Longest first, so a secret containing another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)

    @property
    def longest(self) -> int:
        """The length of the longest form; a cut text keeps this much more."""
        return len(self._forms[0]) if self._forms else 0

    def redact(self, text: str) -> str:
        """Return the text with every secret replaced."""
        for form in self._forms:
            text = text.replace(form, MASK)
        return text

    def redact_head(self, text: str) -> str:
        """Redact the start of a longer text: a secret cut at its end goes too."""
        text = self.redact(text)
        return text[: len(text) - self._partial_at_end(text)]

    def _partial_at_end(self, text: str) -> int:
        """Return the length of the longest end of `text` that starts a secret."""
        longest = 0
        for form in self._forms:
            end = text[max(0, len(text) - len(form) + 1) :] if len(form) > 1 else ""
            start = end.find(form[0])
            while start != -1 and len(end) - start > longest:
                if form.startswith(end[start:]):
                    longest = len(end) - start
                    break
                start = end.find(form[0], start + 1)
        return longest

    def redact_tail(self, text: str) -> str:
        """Redact the end of a longer text: its start may hold part of a secret."""
        return self.redact(text)[self.longest :]
