"""Text rules of memory pages: names, notes, lines, links."""

import pytest

from custom_components.desktop_assistant.memory.text import (
    add_note,
    content_lines,
    hint,
    line_key,
    links,
    note_line,
    notes,
    tokens,
    unlink,
)
from custom_components.desktop_assistant.text import fold_name


@pytest.mark.parametrize(
    ("a", "b"),
    [("Anouk", "ANOUK"), ("Zoë", "zoe"), ("  Café  de   Flore ", "cafe de flore")],
)
def test_fold_ignores_case_accents_and_spacing(a: str, b: str) -> None:
    assert fold_name(a) == fold_name(b)


def test_tokens_are_characters_over_four() -> None:
    assert tokens("") == 0
    assert tokens("abcd") == 1
    assert tokens("abcde") == 2


def test_add_note_creates_the_notes_section() -> None:
    assert (
        add_note("", "- 2026-11-30: Likes tea") == "## Notes\n- 2026-11-30: Likes tea\n"
    )
    assert add_note("Anouk is a friend.", "- 2026-11-30: x") == (
        "Anouk is a friend.\n\n## Notes\n- 2026-11-30: x\n"
    )


def test_add_note_appends_at_the_end_of_the_notes_section() -> None:
    text = "Intro\n\n## Notes\n- 2026-01-01: a\n\n## Links\n- [[Bob]]\n"
    assert add_note(text, "- 2026-01-02: b") == (
        "Intro\n\n## Notes\n- 2026-01-01: a\n- 2026-01-02: b\n\n## Links\n- [[Bob]]\n"
    )
    assert list(notes(add_note(text, "- 2026-01-02: b"))) == [
        "- 2026-01-01: a",
        "- 2026-01-02: b",
    ]


def test_note_line_is_dated_and_on_one_line() -> None:
    assert note_line("2026-11-03", " Birthday is\n3 November ") == (
        "- 2026-11-03: Birthday is 3 November"
    )


def test_content_lines_skip_blanks_and_headings() -> None:
    assert content_lines("# Anouk\n\nFriend.\n## Notes\n- a\n") == ["Friend.", "- a"]


def test_line_key_ignores_list_marks_links_case_and_end_punctuation() -> None:
    assert line_key("- Lives in [[Utrecht]].") == line_key("lives in utrecht")
    assert line_key("* Works at [[Acme Corp|Acme]]") == "works at acme"


def test_links_and_unlink() -> None:
    text = "Sister of [[Bob]], lives in [[Zoë's flat|the flat]]."
    assert links(text) == ["Bob", "Zoë's flat"]
    assert (
        unlink(text, {fold_name("zoe's flat")})
        == "Sister of [[Bob]], lives in the flat."
    )


def test_hint_is_the_first_content_line_cut() -> None:
    assert hint("## Notes\n- 2026-01-01: likes tea\n") == "2026-01-01: likes tea"
    assert hint("x" * 100, width=10) == "xxxxxxxxx…"
    assert hint("") == ""


def test_line_key_drops_a_note_date() -> None:
    assert line_key("- 2026-11-02: Birthday is 3 November") == "birthday is 3 november"
