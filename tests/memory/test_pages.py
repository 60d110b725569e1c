"""Pages, revisions and tombstones on a real SQLite file."""

import sqlite3

import pytest

from custom_components.desktop_assistant.memory import pages
from custom_components.desktop_assistant.memory.context import (
    CONTEXT_LIMIT,
    INDEX_SIZE,
    INSTRUCTIONS,
    build_context,
)
from custom_components.desktop_assistant.memory.errors import PageError
from custom_components.desktop_assistant.memory.page_reads import Page, find_page
from custom_components.desktop_assistant.memory.pages import (
    create_page,
    remember,
)
from custom_components.desktop_assistant.memory.revisions import (
    revisions as page_revisions,
)
from custom_components.desktop_assistant.memory.search import (
    COMMON_WORD_PAGES,
    RECALL_LIMIT,
    recall,
    recall_text,
)
from custom_components.desktop_assistant.memory.text import notes
from custom_components.desktop_assistant.store import transaction

DAY = "2026-11-30"


def note(
    connection: sqlite3.Connection, page: str, fact: str, day: str = DAY, **kwargs
) -> tuple[Page, bool]:
    with transaction(connection):
        return remember(connection, page, fact, day, 1000.0, **kwargs)


def new_page(
    connection: sqlite3.Connection,
    name: str,
    text: str = "",
    aliases: list[str] | None = None,
    kind: str = "person",
    now: float = 1000.0,
) -> Page:
    with transaction(connection):
        return create_page(
            connection,
            name,
            kind,
            text=text,
            aliases=aliases or [],
            now=now,
            author="person",
        )


def test_remember_creates_a_page_with_a_dated_note(
    connection: sqlite3.Connection,
) -> None:
    page, added = note(connection, "Anouk", "Birthday is 3 November", kind="person")
    assert added
    assert page.name == "Anouk"
    assert page.kind == "person"
    assert page.text == "## Notes\n- 2026-11-30: Birthday is 3 November\n"
    (revision,) = page_revisions(connection, page.id)
    assert revision["author"] == "remember"
    assert revision["text"] == page.text


def test_remember_appends_to_an_existing_page_by_alias_and_keeps_its_text(
    connection: sqlite3.Connection,
) -> None:
    page = new_page(connection, "Anouk", "Sara's sister.\n", ["Noukie"])
    written, _ = note(connection, "NOUKIE", "Moved to Leiden", day="2026-12-01")
    assert written.id == page.id
    assert written.text == (
        "Sara's sister.\n\n## Notes\n- 2026-12-01: Moved to Leiden\n"
    )
    assert [r["author"] for r in page_revisions(connection, page.id)] == [
        "remember",
        "person",
    ]


def test_remember_on_the_profile(connection: sqlite3.Connection) -> None:
    page, _ = note(connection, "profile", "We have a cat called Mosi")
    assert page.is_profile
    assert page.name == "Profile"
    again, _ = note(connection, "Profile", "We live in Utrecht")
    assert again.id == page.id
    assert list(notes(again.text)) == [
        "- 2026-11-30: We have a cat called Mosi",
        "- 2026-11-30: We live in Utrecht",
    ]


def test_same_note_the_same_day_is_not_added_twice(
    connection: sqlite3.Connection,
) -> None:
    note(connection, "Anouk", "Birthday is 3 November")
    page, added = note(
        connection, "anouk", "birthday is  3 November", author="extraction"
    )
    assert not added
    assert page.text.count("Birthday") == 1
    _, added = note(connection, "Anouk", "Birthday is 3 November", day="2026-12-01")
    assert added


def test_remember_refuses_a_tombstoned_name(connection: sqlite3.Connection) -> None:
    page = new_page(connection, "Marco", "Ex.\n", ["Marc"])
    with transaction(connection):
        pages.delete_forever(connection, page.id, "marco", 2000.0)
    for name in ("Marco", "marc"):
        with pytest.raises(PageError, match="deleted forever") as caught:
            note(connection, name, "Likes football")
        assert caught.value.code == "tombstoned"
    assert find_page(connection, "Marco") is None


def test_deleting_one_owners_page_forever_leaves_the_others_of_that_name(
    connection: sqlite3.Connection,
) -> None:
    """Anna, Bruno and the household each have a "Doctor"; Anna deletes hers."""
    with transaction(connection):
        annas = create_page(
            connection, "Doctor", "person", text="Dr Rossi.\n", aliases=[],
            now=1000.0, author="person", user_id="anna",
        )  # fmt: skip
        for owner in ("bruno", None):
            create_page(
                connection, "Doctor", "person", text="Dr Weber.\n", aliases=[],
                now=1000.0, author="person", user_id=owner,
            )  # fmt: skip
            create_page(
                connection, "Health", "other", text="See [[Doctor]].\n",
                aliases=[], now=1000.0, author="person", user_id=owner,
            )  # fmt: skip
        create_page(
            connection, "Visits", "other", text="Ask [[Doctor]].\n", aliases=[],
            now=1000.0, author="person", user_id="anna",
        )  # fmt: skip
        unlinked = pages.delete_forever(connection, annas.id, "Doctor", 2000.0)
    assert unlinked == ["Visits"]
    for owner in ("bruno", None):
        health = find_page(connection, "Health", owner)
        assert health is not None and "[[Doctor]]" in health.text
        assert find_page(connection, "Doctor", owner) is not None
        assert note(connection, "Doctor", "Moved", user_id=owner)[1]
    with pytest.raises(PageError, match="deleted forever"):
        note(connection, "Doctor", "Moved", user_id="anna")


def test_forget_takes_whole_words_never_parts_of_them(
    connection: sqlite3.Connection,
) -> None:
    with transaction(connection):
        create_page(
            connection, "Kitchen", "other", text="- Likes tea\n- Cleans with steam\n"
            "- Drinks green tea at night\n", aliases=[], now=1000.0,
            author="person", user_id="anna",
        )  # fmt: skip
        page, gone = pages.forget_fact(connection, "Kitchen", "tea", 2000.0, "anna")
    assert gone == 2
    assert page.text == "- Cleans with steam\n"
    for nothing in ("I", "a", "  "):
        with transaction(connection), pytest.raises(PageError) as caught:
            pages.forget_fact(connection, "Kitchen", nothing, 3000.0, "anna")
        assert caught.value.code == "invalid_fact"


def test_remember_refuses_a_recently_deleted_page(
    connection: sqlite3.Connection,
) -> None:
    page = new_page(connection, "Marco")
    with transaction(connection):
        pages.delete_page(connection, page.id, 2000.0)
    with pytest.raises(PageError) as caught:
        note(connection, "Marco", "x")
    assert caught.value.code == "deleted"


def test_names_are_unique_ignoring_case_and_accents(
    connection: sqlite3.Connection,
) -> None:
    new_page(connection, "Zoë", aliases=["Zoetje"])
    for name, aliases in (("zoe", []), ("Bob", ["ZOETJE"]), ("profile", [])):
        with pytest.raises(PageError) as caught:
            new_page(connection, name, aliases=aliases)
        assert caught.value.code == "name_taken"


def test_recall_by_alias_first(connection: sqlite3.Connection) -> None:
    new_page(connection, "Anouk", "Plays the cello.\n", ["Noukie"])
    new_page(connection, "Bob", "Noukie's friend from school.\n")
    found, more = recall(connection, "noukie")
    assert [page.name for page in found] == ["Anouk", "Bob"]
    assert more == 0


def test_recall_ignores_accents_case_and_filler_words(
    connection: sqlite3.Connection,
) -> None:
    new_page(connection, "Café Flore", "Our favourite café in Utrecht.\n", kind="place")
    new_page(connection, "Anouk", "Sara's sister.\n")
    found, _ = recall(connection, "what do you know about the CAFE")
    assert [page.name for page in found] == ["Café Flore"]
    found, _ = recall(connection, "utrécht")
    assert [page.name for page in found] == ["Café Flore"]
    with pytest.raises(PageError) as caught:
        recall(connection, "what do you know about the")
    assert caught.value.code == "no_words"


def test_recall_is_bounded(connection: sqlite3.Connection) -> None:
    for number in range(8):
        new_page(connection, f"Cousin {number}", "Lives in Rome. " + "x" * 1500)
    found, more = recall(connection, "rome")
    assert len(found) == 5
    assert more == 3
    text = recall_text(found, more)
    assert len(text) <= RECALL_LIMIT + 100
    assert "more pages match" in text
    assert recall_text([], 0).startswith("No page matches")


def test_recall_skips_deleted_pages(connection: sqlite3.Connection) -> None:
    page = new_page(connection, "Marco", "Plays football.\n")
    with transaction(connection):
        pages.delete_page(connection, page.id, 2000.0)
    assert recall(connection, "football") == ([], 0)
    assert recall(connection, "Marco") == ([], 0)


def test_context_has_profile_index_and_instructions(
    connection: sqlite3.Connection,
) -> None:
    note(connection, "profile", "We live in Utrecht")
    new_page(connection, "Anouk", "Sara's sister.\n", ["Noukie"], now=1)
    new_page(connection, "Mosi", "Our cat.\n", kind="thing", now=2)
    context = build_context(connection)
    assert "call recall" in context
    assert "- 2026-11-30: We live in Utrecht" in context
    index = context.split("## Index of pages")[1]
    assert index.index("- Mosi (thing): Our cat.") < index.index(
        "- Anouk (person; also Noukie): Sara's sister."
    )
    assert "Profile (" not in index


def test_context_index_keeps_the_fifty_most_recent(
    connection: sqlite3.Connection,
) -> None:
    for number in range(60):
        new_page(connection, f"Page {number:02}", "x\n", now=number)
    context = build_context(connection)
    assert context.count("\n- Page ") == INDEX_SIZE
    assert "Page 59" in context
    assert "Page 09" not in context
    assert "Page 10" in context


def test_context_shortens_the_index_first_then_cuts_the_profile(
    connection: sqlite3.Connection,
) -> None:
    for number in range(50):
        new_page(connection, f"Page {number:02}", "y" * 200 + "\n", now=number)
    for number in range(20):
        note(connection, "profile", f"Fact {number:02} " + "z" * 300)
    context = build_context(connection)
    assert len(context) <= CONTEXT_LIMIT
    # The profile is whole; the index lost its oldest pages.
    assert "Fact 19" in context
    assert "Page 49" in context
    assert "Page 00" not in context
    for number in range(20, 40):
        note(connection, "profile", f"Fact {number:02} " + "z" * 300)
    context = build_context(connection)
    assert len(context) == CONTEXT_LIMIT
    assert "Page " not in context
    assert "Fact 00" in context
    assert "Fact 39" not in context
    assert context.startswith(INSTRUCTIONS)


def test_context_changes_only_when_memory_changes(
    connection: sqlite3.Connection,
) -> None:
    note(connection, "Anouk", "Birthday is 3 November")
    first = build_context(connection)
    assert build_context(connection) == first
    recall(connection, "anouk")
    assert build_context(connection) == first
    note(connection, "Bob", "Anouk's neighbour")
    assert build_context(connection) != first


def test_recall_ranks_by_rare_words_when_one_is_on_many_pages(
    connection: sqlite3.Connection,
) -> None:
    for number in range(COMMON_WORD_PAGES + 5):
        new_page(
            connection, f"Neighbour {number}", "Lives in our street.\n", now=number
        )
    new_page(connection, "Anouk", "Lives in Leiden, plays the cello.\n", now=0)
    found, more = recall(connection, "who in the street plays the cello")
    assert found[0].name == "Anouk"
    # Only common words: the newest pages that have them.
    found, more = recall(connection, "street")
    assert [page.name for page in found][:2] == [
        f"Neighbour {COMMON_WORD_PAGES + 4}",
        f"Neighbour {COMMON_WORD_PAGES + 3}",
    ]
    assert more > 0
