"""A consolidation plan and its mechanical checks, plain Python.

The nightly pass asks the model for a plan over memory (rewrite a page, create
a page, merge two pages); before anything is applied, these checks refuse a
plan that would lose or damage what the household told the assistant. They
read text only, so they are tested without Home Assistant or a database.
"""

from dataclasses import dataclass, field
from typing import Any

import probatio as vol

from ...text import fold_name
from ..page_reads import PAGE_KINDS
from ..text import content_lines, line_key, sentence_keys, tokens

# The plan as the model writes it: `response_format` constrains it to this.
DROPPED_SCHEMA = vol.Schema({vol.Required("line"): str, vol.Required("reason"): str})
PLAN_SCHEMA = vol.Schema(
    {
        vol.Required("rewrite"): [
            vol.Schema(
                {
                    vol.Required("page"): str,
                    vol.Required("text"): str,
                    vol.Required("dropped"): [DROPPED_SCHEMA],
                }
            )
        ],
        vol.Required("create"): [
            vol.Schema(
                {
                    vol.Required("page"): str,
                    vol.Required("type"): vol.In(list(PAGE_KINDS)),
                    vol.Required("text"): str,
                }
            )
        ],
        vol.Required("merge"): [
            vol.Schema(
                {
                    vol.Required("into"): str,
                    vol.Required("absorb"): str,
                    vol.Required("text"): str,
                    vol.Required("dropped"): [DROPPED_SCHEMA],
                }
            )
        ],
    }
)


@dataclass(frozen=True, slots=True)
class PageState:
    """What the checks know of a page: names, text and its latest revision.

    `text` is what the model was shown; `hidden` the leading part of a page
    too long to show whole, which a rewrite keeps as it is.
    """

    name: str
    text: str
    revision: int
    aliases: tuple[str, ...] = ()
    is_profile: bool = False
    deleted: bool = False
    hidden: str = ""
    kind: str = "other"

    @property
    def names(self) -> set[str]:
        """The folded name and aliases."""
        return {fold_name(self.name), *(fold_name(alias) for alias in self.aliases)}


@dataclass(frozen=True, slots=True)
class MemoryState:
    """Memory as the checks see it: pages by folded name, tombstoned names."""

    pages: tuple[PageState, ...]
    tombstones: frozenset[str] = frozenset()
    profile_budget: int = 800

    def find(self, name: str) -> PageState | None:
        """Return the page `name` names (its name or an alias), if any."""
        key = fold_name(name)
        return next((page for page in self.pages if key in page.names), None)


@dataclass(frozen=True, slots=True)
class Dropped:
    """A line a plan removes on purpose, and why."""

    line: str
    reason: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    """New text for a page, typically with its notes folded in."""

    page: str
    text: str
    dropped: tuple[Dropped, ...] = ()


@dataclass(frozen=True, slots=True)
class Create:
    """A new page."""

    page: str
    type: str
    text: str


@dataclass(frozen=True, slots=True)
class Merge:
    """Two pages about one thing: `absorb` is deleted, its names become aliases."""

    into: str
    absorb: str
    text: str
    dropped: tuple[Dropped, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """What one consolidation proposes."""

    rewrites: tuple[Rewrite, ...] = ()
    creates: tuple[Create, ...] = ()
    merges: tuple[Merge, ...] = ()

    @property
    def is_empty(self) -> bool:
        """Whether the plan changes nothing."""
        return not (self.rewrites or self.creates or self.merges)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a plan is refused: a code, the page, and a sentence for the model."""

    code: str
    page: str
    message: str


@dataclass(slots=True)
class _Checks:
    planned: MemoryState
    current: MemoryState
    refusals: list[Refusal] = field(default_factory=list)

    def refuse(self, code: str, page: str, message: str) -> None:
        self.refusals.append(Refusal(code, page, message))


def parse_plan(data: dict[str, Any]) -> Plan:
    """Return the plan of the model's JSON (already valid for PLAN_SCHEMA)."""

    def dropped(items: list[dict[str, str]]) -> tuple[Dropped, ...]:
        return tuple(Dropped(item["line"], item["reason"]) for item in items)

    return Plan(
        rewrites=tuple(
            Rewrite(item["page"], item["text"], dropped(item["dropped"]))
            for item in data["rewrite"]
        ),
        creates=tuple(
            Create(item["page"], item["type"], item["text"]) for item in data["create"]
        ),
        merges=tuple(
            Merge(item["into"], item["absorb"], item["text"], dropped(item["dropped"]))
            for item in data["merge"]
        ),
    )


def check_plan(plan: Plan, planned: MemoryState, current: MemoryState) -> list[Refusal]:
    """Return why `plan` must not be applied; empty when it may.

    `planned` is memory as the model was shown it, `current` memory now: a
    page whose revision moved on in between is not the page the model read.
    """
    checks = _Checks(planned, current)
    targets = _check_targets(checks, plan)
    _check_names(checks, plan)
    _check_texts(checks, plan)
    if not checks.refusals:
        _check_lines(checks, plan, targets)
    return checks.refusals


def _check_targets(checks: _Checks, plan: Plan) -> dict[str, PageState]:
    """Check that every page the plan changes exists, unchanged, once."""
    targets: dict[str, PageState] = {}
    named = [(r.page, "rewrite") for r in plan.rewrites] + [
        (name, "merge") for m in plan.merges for name in (m.into, m.absorb)
    ]
    for name, action in named:
        page = checks.current.find(name)
        if page is None:
            checks.refuse(
                "unknown_page", name, f"there is no page {name!r} to {action}"
            )
            continue
        if page.deleted:
            checks.refuse(
                "deleted_page",
                name,
                f"page {name!r} was deleted by the household; leave it alone",
            )
            continue
        seen = checks.planned.find(name)
        if seen is None or seen.revision != page.revision:
            checks.refuse(
                "changed",
                name,
                f"page {name!r} changed after the plan was made; leave it for now",
            )
        if fold_name(page.name) in targets:
            checks.refuse(
                "duplicate_target",
                name,
                f"page {name!r} is changed by more than one action; use one",
            )
        # The lines to keep are those the model was shown.
        targets[fold_name(page.name)] = seen or page
    _check_profile(checks, plan)
    return targets


def _check_profile(checks: _Checks, plan: Plan) -> None:
    """Check that no merge takes a page with itself or the profile, and no rename."""
    for merge in plan.merges:
        into, absorb = (
            checks.current.find(merge.into),
            checks.current.find(merge.absorb),
        )
        if into is not None and into is absorb:
            checks.refuse(
                "same_page", merge.into, "a page cannot be merged with itself"
            )
        for page in (into, absorb):
            if page is not None and page.is_profile:
                checks.refuse(
                    "profile_merged",
                    page.name,
                    "the profile cannot be merged; create or rewrite pages instead",
                )
    for rewrite in plan.rewrites:
        page = checks.current.find(rewrite.page)
        if (
            page is not None
            and page.is_profile
            and fold_name(rewrite.page) != fold_name(page.name)
        ):
            checks.refuse(
                "profile_renamed", rewrite.page, "the profile cannot be renamed"
            )


def _check_names(checks: _Checks, plan: Plan) -> None:
    """Check that created pages take names nobody has and nobody forgot."""
    taken = {name for page in checks.current.pages for name in page.names}
    for create in plan.creates:
        key = fold_name(create.page)
        if not key:
            checks.refuse("name_taken", create.page, "a new page needs a name")
        elif key in checks.current.tombstones:
            checks.refuse(
                "name_tombstoned",
                create.page,
                f"{create.page!r} was deleted forever by the household; "
                "do not create it",
            )
        elif key in taken:
            checks.refuse(
                "name_taken",
                create.page,
                f"{create.page!r} is already a page name or alias; "
                "rewrite that page instead",
            )
        taken.add(key)


def _check_texts(checks: _Checks, plan: Plan) -> None:
    """Check that no page is emptied and the profile does not grow past its budget."""
    texts = [(r.page, r.text) for r in plan.rewrites]
    texts += [(c.page, c.text) for c in plan.creates]
    texts += [(m.into, m.text) for m in plan.merges]
    for name, text in texts:
        if not content_lines(text):
            checks.refuse("emptied", name, f"the new text of {name!r} is empty")
    budget = checks.current.profile_budget
    for rewrite in plan.rewrites:
        page = checks.current.find(rewrite.page)
        if page is None or not page.is_profile:
            continue
        seen = checks.planned.find(rewrite.page)
        after = tokens(f"{seen.hidden if seen else ''}\n{rewrite.text}")
        if after > budget and after > tokens(page.text):
            checks.refuse(
                "profile_over_budget",
                page.name,
                f"the profile would grow to about {after} tokens, over its budget "
                f"of {budget}; move detail to other pages instead",
            )


def _check_lines(checks: _Checks, plan: Plan, targets: dict[str, PageState]) -> None:
    """Check that every line of a changed page survives somewhere, or is declared.

    A line survives as a whole line or a whole sentence of one: "She is not
    allergic to peanuts" does not keep "Allergic to peanuts".
    """
    new_keys: set[str] = set()
    for text in (
        *(r.text for r in plan.rewrites),
        *(c.text for c in plan.creates),
        *(m.text for m in plan.merges),
    ):
        for line in content_lines(text):
            new_keys.add(line_key(line))
            new_keys.update(sentence_keys(line))
    declared: dict[str, set[str]] = {}
    for action in (*plan.rewrites, *plan.merges):
        for item in action.dropped:
            if item.reason.strip():
                declared.setdefault(line_key(item.line), set()).add(item.reason)
    for page in targets.values():
        for line in content_lines(page.text):
            key = line_key(line)
            if not key or key in declared:
                continue
            if key in new_keys:
                continue
            checks.refuse(
                "line_lost",
                page.name,
                f"the line {line!r} of {page.name!r} is missing from the new text; "
                "keep it, or list it under dropped with a reason",
            )


def refusal_text(refusals: list[Refusal]) -> str:
    """Return the refusals as the lines sent back to the model."""
    return "\n".join(f"- {refusal.message}" for refusal in refusals)
