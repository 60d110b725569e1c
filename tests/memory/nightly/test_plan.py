"""The mechanical checks of a consolidation plan: each reason to refuse."""

import pytest

from custom_components.desktop_assistant.memory.nightly.plan import (
    PLAN_SCHEMA,
    Create,
    Dropped,
    MemoryState,
    Merge,
    PageState,
    Plan,
    Rewrite,
    check_plan,
    parse_plan,
    refusal_text,
)
from custom_components.desktop_assistant.server.generate import (
    GenerationError,
    parse_structured,
)

PROFILE = PageState(
    "Profile",
    "We live in Utrecht.\n\n## Notes\n- 2026-11-01: We have a cat called Mosi\n",
    revision=3,
    is_profile=True,
)
ANOUK = PageState(
    "Anouk",
    "Anouk is Sara's sister.\n\n## Notes\n- 2026-11-02: Birthday is 3 November\n"
    "- 2026-11-20: Moved to Leiden\n",
    revision=7,
    aliases=("Noukie",),
)
NOUKIE_DUP = PageState("Anouk V.", "Plays the cello.\n", revision=9)
MEMORY = MemoryState((PROFILE, ANOUK, NOUKIE_DUP), frozenset({"ex-boyfriend"}), 800)

ANOUK_FOLDED = (
    "Anouk is Sara's sister. Her birthday is 3 November.\n\n"
    "- Birthday is 3 November\n- Moved to Leiden\n"
)


def codes(plan: Plan, current: MemoryState = MEMORY) -> list[str]:
    return [refusal.code for refusal in check_plan(plan, MEMORY, current)]


def test_rewrite_keeping_every_line_is_accepted() -> None:
    assert codes(Plan(rewrites=(Rewrite("anouk", ANOUK_FOLDED),))) == []


def test_empty_plan_is_accepted() -> None:
    assert Plan().is_empty
    assert codes(Plan()) == []


def test_declared_dropped_line_is_accepted() -> None:
    plan = Plan(
        rewrites=(
            Rewrite(
                "Anouk",
                "Anouk is Sara's sister.\n- Birthday is 3 November\n",
                (Dropped("- 2026-11-20: Moved to Leiden", "superseded: moved back"),),
            ),
        )
    )
    assert codes(plan) == []


def test_silently_dropped_line_is_refused() -> None:
    plan = Plan(rewrites=(Rewrite("Anouk", "Anouk is Sara's sister.\n"),))
    refusals = check_plan(plan, MEMORY, MEMORY)
    assert [r.code for r in refusals] == ["line_lost", "line_lost"]
    assert "Birthday is 3 November" in refusals[0].message
    assert refusal_text(refusals).count("\n- ") == 1


def test_dropped_line_without_reason_is_not_declared() -> None:
    plan = Plan(
        rewrites=(
            Rewrite(
                "Anouk",
                "Anouk is Sara's sister.\n- Birthday is 3 November\n",
                (Dropped("- 2026-11-20: Moved to Leiden", "  "),),
            ),
        )
    )
    assert codes(plan) == ["line_lost"]


def test_line_moved_to_a_created_page_is_kept() -> None:
    plan = Plan(
        rewrites=(Rewrite("Profile", "We live in Utrecht.\nOur cat: see [[Mosi]].\n"),),
        creates=(Create("Mosi", "thing", "- We have a cat called Mosi\n"),),
    )
    assert codes(plan) == []


def test_page_changed_meanwhile_is_refused() -> None:
    moved_on = MemoryState(
        (
            PROFILE,
            PageState("Anouk", ANOUK.text + "- x\n", 8, ANOUK.aliases),
            NOUKIE_DUP,
        ),
        MEMORY.tombstones,
    )
    assert codes(Plan(rewrites=(Rewrite("Anouk", ANOUK_FOLDED),)), moved_on) == [
        "changed"
    ]


def test_unknown_page_is_refused() -> None:
    assert codes(Plan(rewrites=(Rewrite("Bob", "Bob.\n"),))) == ["unknown_page"]


def test_page_targeted_twice_is_refused() -> None:
    plan = Plan(
        rewrites=(Rewrite("Anouk", ANOUK_FOLDED), Rewrite("Noukie", ANOUK_FOLDED))
    )
    assert codes(plan) == ["duplicate_target"]


@pytest.mark.parametrize("text", ["", "  \n", "## Notes\n"])
def test_emptied_page_is_refused(text: str) -> None:
    assert "emptied" in codes(Plan(rewrites=(Rewrite("Anouk", text),)))


def test_profile_cannot_be_merged() -> None:
    plan = Plan(merges=(Merge("Anouk", "Profile", ANOUK_FOLDED + PROFILE.text),))
    assert codes(plan) == ["profile_merged"]


def test_profile_cannot_be_renamed() -> None:
    aliased = PageState(
        "Profile", PROFILE.text, 3, aliases=("Household",), is_profile=True
    )
    memory = MemoryState((aliased, ANOUK), frozenset())
    plan = Plan(rewrites=(Rewrite("Household", PROFILE.text),))
    assert [r.code for r in check_plan(plan, memory, memory)] == ["profile_renamed"]


def test_tombstoned_name_is_refused() -> None:
    plan = Plan(creates=(Create("Ex-Boyfriend", "person", "Someone.\n"),))
    assert codes(plan) == ["name_tombstoned"]


@pytest.mark.parametrize("name", ["noukie", "ANOUK", "Anouk V."])
def test_taken_name_is_refused(name: str) -> None:
    assert codes(Plan(creates=(Create(name, "person", "Someone.\n"),))) == [
        "name_taken"
    ]


def test_two_creates_of_one_name_are_refused() -> None:
    plan = Plan(
        creates=(Create("Bob", "person", "A.\n"), Create("bob", "person", "B.\n"))
    )
    assert codes(plan) == ["name_taken"]


def test_growing_an_over_budget_profile_is_refused() -> None:
    small = MemoryState((PROFILE, ANOUK), frozenset(), profile_budget=10)
    grown = PROFILE.text + "We also like long walks along the canals.\n"
    plan = Plan(rewrites=(Rewrite("Profile", grown),))
    assert [r.code for r in check_plan(plan, small, small)] == ["profile_over_budget"]
    # Shrinking an over-budget profile is what the plan should do.
    shrunk = Plan(
        rewrites=(Rewrite("Profile", "We live in Utrecht.\n"),),
        creates=(Create("Mosi", "thing", "We have a cat called Mosi\n"),),
    )
    assert check_plan(shrunk, small, small) == []


def test_merge_keeps_both_pages_lines() -> None:
    text = ANOUK_FOLDED + "Plays the cello.\n"
    assert codes(Plan(merges=(Merge("Anouk", "Anouk V.", text),))) == []
    assert codes(Plan(merges=(Merge("Anouk", "Anouk V.", ANOUK_FOLDED),))) == [
        "line_lost"
    ]


def test_merge_with_itself_is_refused() -> None:
    plan = Plan(merges=(Merge("Anouk", "Noukie", ANOUK_FOLDED),))
    assert "same_page" in codes(plan)


def test_plan_json_is_parsed_and_validated() -> None:
    data = parse_structured(
        '{"rewrite": [{"page": "Anouk", "text": "T", "dropped": '
        '[{"line": "- x", "reason": "old"}]}], "create": [], "merge": []}',
        PLAN_SCHEMA,
    )
    assert parse_plan(data) == Plan(
        rewrites=(Rewrite("Anouk", "T", (Dropped("- x", "old"),)),)
    )
    with pytest.raises(GenerationError) as caught:
        parse_structured('{"rewrite": [], "create": []}', PLAN_SCHEMA)
    assert caught.value.kind == "invalid_output"


ALLERGY = PageState("Mila", "- 2026-11-02: Allergic to peanuts\n", revision=4)


@pytest.mark.parametrize(
    "text",
    [
        "She is not allergic to peanuts.\n",
        "Mila was once allergic to peanuts, no longer.\n",
        "Not allergic to peanuts\n",
    ],
)
def test_a_line_inside_a_longer_line_is_not_kept(text: str) -> None:
    memory = MemoryState((ALLERGY,))
    refusals = check_plan(Plan(rewrites=(Rewrite("Mila", text),)), memory, memory)
    assert [refusal.code for refusal in refusals] == ["line_lost"]


def test_a_line_kept_whole_or_as_a_whole_sentence_is_kept() -> None:
    memory = MemoryState((ALLERGY,))
    for text in ("Allergic to peanuts.\n", "Mila is six. Allergic to peanuts.\n"):
        assert check_plan(Plan(rewrites=(Rewrite("Mila", text),)), memory, memory) == []


def test_a_recently_deleted_page_is_no_target() -> None:
    deleted = PageState("Anouk V.", "", revision=9, deleted=True)
    memory = MemoryState((PROFILE, ANOUK, deleted))
    merge = Merge("Anouk V.", "Anouk", ANOUK.text, ())
    rewrite = Rewrite("Anouk V.", "Plays the cello.\n")
    for plan in (Plan(merges=(merge,)), Plan(rewrites=(rewrite,))):
        assert "deleted_page" in [
            refusal.code for refusal in check_plan(plan, memory, memory)
        ]
