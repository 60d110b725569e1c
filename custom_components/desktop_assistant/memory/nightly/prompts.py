"""What the nightly pass asks the model, bounded to fit a small model's context."""

from typing import Final

import probatio as vol

from ...const import CHARS_PER_TOKEN
from ..page_reads import PAGE_KINDS
from ..text import leading_fit
from .plan import PageState

# Names of other pages listed for the model, so it can link and avoid clashes.
MAX_PLAN_NAMES: Final = 200
# The names listed in an extraction request, in characters.
EXTRACT_NAMES_CHARS: Final = 2000
# One part of a conversation, in characters: with the prompt, the names and
# the 512-token answer it fits a 4096-token context.
EXTRACT_CHARS: Final = 8000
# A longer conversation is read in parts, at most this many (its newest).
EXTRACT_PARTS: Final = 4

NOTES_SCHEMA = vol.Schema(
    {
        vol.Required("notes"): [
            vol.Schema(
                {
                    vol.Required("page"): str,
                    vol.Required("type"): vol.In(list(PAGE_KINDS)),
                    vol.Required("fact"): str,
                }
            )
        ]
    }
)

EXTRACT_PROMPT: Final = """\
You keep the long-term memory of a household's voice assistant. Read a \
conversation and return the lasting facts in it, as JSON: {"notes": [{"page", \
"type", "fact"}]}.

Note only facts the person stated or confirmed, about their household's world, \
that will still be true in a month: birthdays, relationships, where someone \
lives or works, preferences, plans. "No notes" ({"notes": []}) is the normal \
answer. Skip what is true only inside the conversation, what can be looked up \
live (weather, news, times), moods, and what only the assistant said. Tool \
calls show what was looked up; they are not facts about the household.

`page` is who or what the fact is about: a person's name, a place, a \
project, a thing. Facts about the person speaking or the household as a whole \
go on the page `profile`. Use an existing page name when one fits. The name of \
the device the person spoke to is a room or a device, never a person. \
`fact` is one short sentence in the conversation's language.
"""

PLAN_PROMPT: Final = """\
You keep the long-term memory of a household's voice assistant tidy. Below are \
pages of memory, each with its dated notes under "## Notes". Return a plan as \
JSON: {"rewrite": [...], "create": [...], "merge": [...]}; empty lists change \
nothing.

- rewrite {"page", "text", "dropped"}: new text for a page that folds its notes \
into plain sentences, removes duplicates, keeps the newer fact when two \
contradict, and adds [[links]] to other pages.
- create {"page", "type", "text"}: a new page, for example to move detail off \
an over-budget profile.
- merge {"into", "absorb", "text", "dropped"}: two pages about the same thing; \
`absorb` is deleted and its names become aliases of `into`.

Every line you do not keep word for word (a note folded into a sentence, a \
superseded fact, a duplicate) must be listed in `dropped` with its `reason`. \
Keep every other line as it is. Never empty a \
page, never rename or merge the profile, never use a name that is taken. The \
profile should stay under {budget} tokens (about {chars} characters).
"""

PART_NOTE: Final = (
    "(Only the newest lines of this page are shown: a rewrite replaces these "
    "lines, the earlier ones stay as they are.)"
)


def extraction_messages(
    lines: list[str], device_name: str | None, names: list[str]
) -> list[dict[str, str]]:
    """The extraction request for one part of a conversation."""
    device = (
        f"The person spoke to a device named {device_name!r}.\n" if device_name else ""
    )
    known = (
        ", ".join(leading_fit(names, EXTRACT_NAMES_CHARS, len(", "))) or "(none yet)"
    )
    return [
        {"role": "system", "content": EXTRACT_PROMPT},
        {
            "role": "user",
            "content": f"Existing pages: {known}\n{device}\nConversation:\n"
            + "\n".join(lines),
        },
    ]


def plan_messages(
    shown: tuple[PageState, ...], names: list[str], budget: int, room: int
) -> list[dict[str, str]]:
    """The consolidation request: the pages to tidy, the other pages' names.

    `shown` is already bounded; the other names fill what is left of `room`.
    """
    sections = [
        f"### {page.name} [{'profile' if page.is_profile else page.kind}]"
        + (f" (aliases: {', '.join(page.aliases)})" if page.aliases else "")
        + (f"\n{PART_NOTE}" if page.hidden else "")
        + f"\n{page.text.strip()}"
        for page in shown
    ]
    room -= sum(len(section) + 2 for section in sections)
    shown_names = {page.name for page in shown}
    others = leading_fit(
        [name for name in names if name not in shown_names], room, len(", ")
    )
    return [
        {
            "role": "system",
            "content": PLAN_PROMPT.replace("{budget}", str(budget)).replace(
                "{chars}", str(budget * CHARS_PER_TOKEN)
            ),
        },
        {
            "role": "user",
            "content": "Pages:\n\n"
            + "\n\n".join(sections)
            + "\n\nOther pages: "
            + (", ".join(others) or "(none)"),
        },
    ]
