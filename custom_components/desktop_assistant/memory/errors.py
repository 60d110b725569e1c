"""Why a request about memory is refused: `PageError` and its codes.

The codes reach the panel through the websocket API (`panel/describe`).
"""

from typing import Final

# Every code a PageError carries, with when it is raised.
ERROR_CODES: Final = {
    "not_found": "no such page, revision or run",
    "changed": "the page changed since the revision the request was based on",
    "name_taken": "another page holds the name or alias",
    "tombstoned": "the name was deleted forever",
    "deleted": "the page is recently deleted",
    "confirmation": "the confirmation is not the page's name",
    "profile": "the profile cannot be renamed, merged or deleted",
    "invalid_type": "not a page type",
    "invalid_name": "the name is empty, too long or not one line",
    "invalid_fact": "the fact is empty or too long",
    "no_words": "the query has only filler words",
    "edited_since": "the page changed after the run: it is left alone",
    "absorbed_gone": "the page a merge absorbed was deleted forever",
    "in_progress": "the nightly pass is already running",
}


class PageError(Exception):
    """A request about memory that cannot be done; `code` names why."""

    def __init__(self, code: str, message: str) -> None:
        """Keep the code for the websocket API and tools."""
        super().__init__(message)
        self.code = code
