"""Reading an evaluate answer from token probabilities, with hostile lists.

Plain functions: the labels a question is asked with, the grammar, and the
distribution read from a first token's `top_logprobs` as llama-server sends
them (`{"token", "logprob", "bytes", "id"}`), renormalised over the labels.
"""

import math
from typing import Any

import pytest

from custom_components.desktop_assistant.server.probabilities import (
    CHOICE_LABELS,
    LEVEL_LABELS,
    ProbabilityError,
    asked_question,
    check_reply,
    first_token,
    grammar,
    label_distribution,
    labelled,
)

YES_NO = asked_question({"type": "noul", "instructions": "Is the door open?"})


def top(*pairs: tuple[Any, Any]) -> dict[str, Any]:
    """A first token's logprobs entry with these (token, logprob) alternatives."""
    return {
        "token": "yes",
        "logprob": -0.1,
        "top_logprobs": [
            {"id": index, "token": token, "logprob": logprob, "bytes": []}
            for index, (token, logprob) in enumerate(pairs)
        ],
    }


def test_the_labels_distribution_is_renormalised_over_the_labels() -> None:
    # " yes", with a space, is another token: the grammar does not allow it.
    entry = top((" yes", -0.2), ("yes", math.log(0.3)), ("no", math.log(0.1)))
    yes, no = label_distribution(entry, YES_NO)
    assert yes == pytest.approx(0.75)
    assert no == pytest.approx(0.25)
    assert math.fsum([yes, no]) == pytest.approx(1.0, abs=1e-12)


def test_yes_and_no_are_read_in_both_spellings() -> None:
    # As SmolLM2 answered: "No" and "Yes" likelier than "yes"; "no" far down.
    entry = top(
        ("No", math.log(0.4)),
        ("Yes", math.log(0.2)),
        ("The", math.log(0.2)),
        ("yes", math.log(0.1)),
        ("no", math.log(0.1)),
    )
    assert label_distribution(entry, YES_NO) == pytest.approx([0.375, 0.625])
    assert check_reply("No", YES_NO) == "no"


def test_tiny_probabilities_do_not_vanish() -> None:
    # exp(-800) is 0.0 in floating point; the ratio e^-1 is not.
    distribution = label_distribution(
        top(("A", -800.0), ("B", -801.0)), labelled("", "AB")
    )
    assert distribution == pytest.approx(
        [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))]
    )
    assert sum(distribution) == pytest.approx(1.0, abs=1e-12)


def test_a_label_missing_from_the_list_counts_as_zero() -> None:
    entry = top(("A", -1.0), ("C", -2.0))
    assert label_distribution(entry, labelled("", "ABC")) == pytest.approx(
        [1 / (1 + math.exp(-1)), 0.0, math.exp(-1) / (1 + math.exp(-1))]
    )


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(top(("yes", math.nan), ("no", -1.0)), id="nan"),
        pytest.param(top(("yes", math.inf), ("no", -1.0)), id="infinite"),
        pytest.param(top(("yes", 0.7), ("no", -1.0)), id="over-one"),
        pytest.param(top(("yes", "-0.1"), ("no", -1.0)), id="a-string"),
        pytest.param(top(("yes", True), ("no", -1.0)), id="a-boolean"),
        pytest.param(top(("yes", None), ("no", -1.0)), id="missing-logprob"),
        pytest.param(top((None, -0.1), ("no", -1.0)), id="missing-token"),
        pytest.param(
            {"top_logprobs": [{"token": "yes"}, "no", {"token": "no", "logprob": -1}]},
            id="not-entries",
        ),
    ],
)
def test_entries_that_are_not_probabilities_are_refused(entry: Any) -> None:
    with pytest.raises(ProbabilityError) as raised:
        label_distribution(entry, YES_NO)
    assert raised.value.kind == "invalid_probabilities"


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(None, id="no-logprobs"),
        pytest.param({"token": "yes", "logprob": -0.1}, id="no-top-list"),
        pytest.param({"top_logprobs": []}, id="an-empty-list"),
        pytest.param({"top_logprobs": {"yes": -0.1}}, id="a-dict"),
        pytest.param(top(("maybe", -0.1), (" yes", -2.0)), id="only-other-tokens"),
    ],
)
def test_no_probabilities_for_the_labels_is_an_error(entry: Any) -> None:
    with pytest.raises(ProbabilityError) as raised:
        label_distribution(entry, YES_NO)
    assert raised.value.kind == "no_probabilities"


def test_a_reply_outside_the_labels_is_an_error() -> None:
    assert check_reply(" yes\n", YES_NO) == "yes"
    for reply in ("maybe", "I cannot answer that.", "", "YES"):
        with pytest.raises(ProbabilityError) as raised:
            check_reply(reply, YES_NO)
        assert raised.value.kind == "outside_answers"


def test_each_kind_of_question_is_asked_with_one_token_labels() -> None:
    noul = asked_question({"type": "noul", "instructions": "Is the door open?"})
    assert noul.labels == ("yes", "no")
    assert grammar(noul.spellings) == 'root ::= "yes" | "Yes" | "no" | "No"'
    assert noul.text.startswith("Is the door open?")
    choice = asked_question(
        {
            "type": "choice",
            "instructions": "Who is at the door?",
            "criteria": {"person": "someone", "parcel": "a box"},
        }
    )
    assert choice.labels == ("A", "B")
    assert "A. person: someone\nB. parcel: a box" in choice.text
    score = asked_question(
        {"type": "score", "instructions": "How tidy?", "criteria": ["a mess", "fine"]}
    )
    assert score.labels == ("0", "1")
    assert "0. a mess\n1. fine" in score.text
    assert grammar(choice.spellings) == 'root ::= "A" | "B"'


@pytest.mark.parametrize(
    ("question", "limit"),
    [
        pytest.param(
            {
                "type": "choice",
                "instructions": "Which?",
                "criteria": {f"option {n}": "x" for n in range(10_000)},
            },
            len(CHOICE_LABELS),
            id="10000-choices",
        ),
        pytest.param(
            {"type": "score", "instructions": "How?", "criteria": ["x"] * 10_000},
            len(LEVEL_LABELS),
            id="10000-levels",
        ),
    ],
)
def test_more_options_than_labels_is_refused(question: Any, limit: int) -> None:
    with pytest.raises(ProbabilityError) as raised:
        asked_question(question)
    assert raised.value.kind == "options"
    assert f"at most {limit}" in str(raised.value)


@pytest.mark.parametrize(
    "question",
    [
        {"type": "choice", "instructions": "Which?", "criteria": {}},
        {"type": "choice", "instructions": "Which?", "criteria": {"only": "one"}},
        {"type": "score", "instructions": "How?", "criteria": []},
    ],
)
def test_fewer_than_two_options_is_refused(question: Any) -> None:
    with pytest.raises(ProbabilityError) as raised:
        asked_question(question)
    assert raised.value.kind == "options"


def test_the_first_token_is_read_from_a_streamed_chunk() -> None:
    entry = top(("yes", -0.1))
    chunk = {
        "choices": [{"delta": {"content": "yes"}, "logprobs": {"content": [entry]}}]
    }
    assert first_token(chunk) is entry
    for other in (None, "data", {"choices": "x"}, {"choices": [{"delta": {}}]}):
        assert first_token(other) is None
