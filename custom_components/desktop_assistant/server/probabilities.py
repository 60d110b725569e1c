"""Answers read from llama-server's token probabilities, for AI Task *evaluate*.

Each question is asked with one-token labels for its answers ("yes"/"no",
letters for choices, digits for score levels); a grammar holds the reply to
the labels and `top_logprobs` asks for the probabilities of the reply's first
token. llama-server reports them from the model's logits before the grammar
and the samplers act (checked on SmolLM2: the list is the same with and
without the grammar), so the labels' probabilities are read from that list
and renormalised over the labels: the distribution sums to 1. A chat model
answers "Yes" more often than "yes", so yes and no are read in both
spellings.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
import math
import string
from typing import Any, Literal

NOUL_LABELS = ("yes", "no")
# Each label of a yes/no answer and its capitalised spelling.
NOUL_SPELLINGS = {"yes": 0, "Yes": 0, "no": 1, "No": 1}
CHOICE_LABELS = tuple(string.ascii_uppercase)
LEVEL_LABELS = tuple(string.digits)
# How many of the first token's likeliest tokens are asked for: the labels
# are among them whenever the model considers them at all.
TOP_LOGPROBS = 64
# A label is one token; the grammar may reach it in a few pieces.
MAX_LABEL_TOKENS = 4
# A log-probability a hair above 0 is rounding, not a probability over 1.
LOGPROB_ROUNDING = 1e-6

# How reading an answer failed: fewer than two options, or more than there
# are labels; no probabilities for the labels; probabilities that are not
# probabilities; a reply that is not one of the labels.
type ProbabilityKind = Literal[
    "options", "no_probabilities", "invalid_probabilities", "outside_answers"
]


class ProbabilityError(Exception):
    """An answer could not be read; `kind` says why."""

    def __init__(self, kind: ProbabilityKind, message: str) -> None:
        """Keep the kind beside the message."""
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Asked:
    """A question as the model is asked it: its text and its answers' labels.

    `spellings` maps each first token the reply may be to the option it
    answers (the index of its label).
    """

    text: str
    labels: tuple[str, ...]
    spellings: Mapping[str, int]


def labelled(text: str, labels: Sequence[str]) -> Asked:
    """A question whose labels are spelt one way each."""
    return Asked(text, tuple(labels), {label: i for i, label in enumerate(labels)})


def asked_question(question: Mapping[str, Any]) -> Asked:
    """The question's text with its options listed, and their labels.

    `noul` is answered yes or no; a `choice` by the letter of an option; a
    `score` by the digit of a level (how to answer is said once, in the
    system prompt, which every question shares). Fewer than two options, or
    more than there are labels, is refused.
    """
    instructions = str(question["instructions"])
    if question["type"] == "noul":
        return Asked(instructions, NOUL_LABELS, NOUL_SPELLINGS)
    if question["type"] == "choice":
        options = [f"{key}: {text}" for key, text in question["criteria"].items()]
        labels = CHOICE_LABELS
    else:
        options = [str(text) for text in question["criteria"]]
        labels = LEVEL_LABELS
    if not 2 <= len(options) <= len(labels):
        raise ProbabilityError(
            "options",
            f"{len(options)} options; from 2 to at most {len(labels)} can be asked",
        )
    listed = "\n".join(
        f"{label}. {text}" for label, text in zip(labels, options, strict=False)
    )
    return labelled(f"{instructions}\n{listed}", labels[: len(options)])


def grammar(spellings: Iterable[str]) -> str:
    """llama-server's GBNF grammar that allows exactly one of the spellings."""
    return "root ::= " + " | ".join(f'"{spelling}"' for spelling in spellings)


def request_fields(asked: Asked) -> dict[str, Any]:
    """What a question's chat request adds: the grammar and the probabilities."""
    return {
        "grammar": grammar(asked.spellings),
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
    }


def first_token(chunk: object) -> object:
    """The first token's logprobs entry in a streamed chunk; None without one."""
    if not isinstance(chunk, Mapping) or not isinstance(
        choices := chunk.get("choices"), list
    ):
        return None
    for choice in choices:
        logprobs = choice.get("logprobs") if isinstance(choice, Mapping) else None
        content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
        if isinstance(content, list) and content:
            return content[0]
    return None


def label_distribution(token: object, asked: Asked) -> list[float]:
    """The labels' probabilities among the token's `top_logprobs`, summing to 1.

    Each label's spellings add up; the labels are renormalised. A label
    missing from the list counts as 0; none present, no list, or an entry
    that is not a token with a finite log-probability of at most 0, is an
    error.
    """
    top = token.get("top_logprobs") if isinstance(token, Mapping) else None
    if not isinstance(top, list) or not top:
        raise ProbabilityError("no_probabilities", "the server sent no probabilities")
    found: dict[str, float] = {}
    for entry in top:
        text, logprob = _token_logprob(entry)
        if text in asked.spellings:
            found.setdefault(text, logprob)
    if not found:
        raise ProbabilityError(
            "no_probabilities",
            f"none of the answers {', '.join(asked.labels)} is among the "
            f"{len(top)} likeliest first tokens",
        )
    # Renormalised in log space, so that tiny probabilities do not vanish.
    highest = max(found.values())
    weights = [0.0] * len(asked.labels)
    for text, logprob in found.items():
        weights[asked.spellings[text]] += math.exp(logprob - highest)
    total = math.fsum(weights)
    return [weight / total for weight in weights]


def _token_logprob(entry: object) -> tuple[str, float]:
    """An entry's token and log-probability; an entry that is not one is an error."""
    if not isinstance(entry, Mapping):
        raise ProbabilityError("invalid_probabilities", f"not a token: {entry!r:.80}")
    token, logprob = entry.get("token"), entry.get("logprob")
    if (
        not isinstance(token, str)
        or isinstance(logprob, bool)
        or not isinstance(logprob, int | float)
        or not math.isfinite(logprob)
        or logprob > LOGPROB_ROUNDING
    ):
        raise ProbabilityError(
            "invalid_probabilities",
            f"not a probability: token {token!r:.40}, logprob {logprob!r:.40}",
        )
    return token, min(float(logprob), 0.0)


def check_reply(text: str, asked: Asked) -> str:
    """The label the reply answers; a reply that is none of them is an error."""
    reply = text.strip()
    if reply not in asked.spellings:
        raise ProbabilityError(
            "outside_answers",
            f"the model answered {reply[:80]!r}, not one of {', '.join(asked.labels)}",
        )
    return asked.labels[asked.spellings[reply]]
