"""Who sees what: the one rule every door reads conversations and pages by.

A conversation typed by a known user (Chat, the app, an automation run as a
user) is that user's; one with no user (a satellite, an automation without
one) is the household's. A page is the household's or one person's, by the
same user id. A turn reads the household's and its own user's, never
another member's, whoever asks, an administrator included: the agent's
tools are no way around the rule. Only the panel, where an administrator
curates, reads everything.

Plain Python, so that `record/`, `memory/` and `tools/`-free modules alike
apply it; no Home Assistant import.
"""

from dataclasses import dataclass
from typing import Any

# What a household's conversation or page has as its owner.
HOUSEHOLD = None


@dataclass(frozen=True, slots=True)
class Reader:
    """Someone reading conversations or pages, and what the rule lets them read."""

    # The user of the turn; None for a turn with no user (a voice).
    user_id: str | None
    # An administrator in the panel: every owner's.
    everything: bool = False

    def may_read(self, owner: str | None) -> bool:
        """Whether something of `owner` (a user id, or HOUSEHOLD) is readable."""
        return self.everything or owner is HOUSEHOLD or owner == self.user_id

    def condition(self, column: str) -> tuple[str, list[Any]]:
        """`may_read` as an SQL condition on an owner column, and its parameters."""
        if self.everything:
            return "1", []
        return f"({column} IS NULL OR {column} IS ?)", [self.user_id]


def asker(llm_context: Any) -> str | None:
    """The user of a tool call's turn (an HA `LLMContext`); None when it has none."""
    context = llm_context.context
    return context.user_id if context is not None else None


# The panel's administrator, curating.
CURATOR = Reader(None, everything=True)
