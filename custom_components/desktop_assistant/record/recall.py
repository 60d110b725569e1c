"""The recall_conversations tool: what was said in earlier conversations."""

from datetime import date, timedelta
from typing import Any, Final, override

from homeassistant.core import HomeAssistant
from homeassistant.helpers import chat_session, llm
from homeassistant.util import dt as dt_util
import probatio as vol

from ..const import DOMAIN
from ..reader import Reader, asker
from ..runtime import DATA_RECORD
from ..store import StoreError
from . import database
from .conversation_record import Record
from .search import MAX_WORDS, match_expression, search_words, snippets

MAX_CONVERSATIONS: Final = 5
# The days a question can name: the first and last a timestamp holds in
# every time zone (the last one's end is still a date).
MIN_DAY: Final = date(1, 1, 2)
MAX_DAY: Final = date(9999, 12, 30)
RECALL_TOOL: Final = f"{DOMAIN}__recall_conversations"


class RecallError(Exception):
    """The question cannot be searched as asked; the message says why."""


def day_bounds(
    day: str | None, first: str | None, last: str | None
) -> tuple[float | None, float | None]:
    """The [start, end) of whole days in HA's time zone, as timestamps; None is open.

    Raises RecallError for anything but ISO dates, and for days a timestamp
    cannot hold (9999-12-31 ends in year 10000).
    """
    if day is not None:
        first = last = day
    try:
        start = date.fromisoformat(first) if first else None
        end = date.fromisoformat(last) if last else None
    except (TypeError, ValueError) as err:
        raise RecallError(f"dates must be ISO dates like 2026-11-03 ({err})") from err
    if start and end and start > end:
        raise RecallError("`from` must not be after `to`")
    try:
        return (
            dt_util.start_of_local_day(start).timestamp() if start else None,
            dt_util.start_of_local_day(end + timedelta(days=1)).timestamp()
            if end
            else None,
        )
    except (OverflowError, OSError, ValueError) as err:
        raise RecallError(f"dates must be between {MIN_DAY} and {MAX_DAY}") from err


async def async_recall(
    record: Record,
    query: str,
    *,
    reader: Reader,
    start: float | None = None,
    end: float | None = None,
    exclude: str | None = None,
) -> list[dict[str, Any]]:
    """At most 5 conversations `reader` may read with the query's words, newest first.

    `start` and `end` are timestamps (see `day_bounds`). Conversations with
    all the words are preferred; when none has them all, those with any of
    them. Raises RecallError for a query without words worth searching for,
    or with more than MAX_WORDS of them.
    """
    words = search_words(query)
    if not words:
        raise RecallError(
            "the query has only short or common words; ask again with the"
            " distinctive words of what was said (a name, a title, a thing)"
        )
    if len(words) > MAX_WORDS:
        raise RecallError(
            f"the query has {len(words)} words to search for; use at most"
            f" {MAX_WORDS}, the most distinctive ones"
        )
    operators = ("AND", "OR") if len(words) > 1 else ("AND",)
    found: list[tuple[dict[str, Any], list[str]]] = []
    for operator in operators:
        match = match_expression(words, operator)
        found = await record.async_read(
            lambda connection, match=match: database.find_conversations(
                connection,
                match,
                reader=reader,
                start=start,
                end=end,
                exclude=exclude,
                limit=MAX_CONVERSATIONS,
            )
        )
        if found:
            break
    return [
        {
            "date": dt_util.as_local(
                dt_util.parse_datetime(summary["started_at"])
            ).strftime("%Y-%m-%d %H:%M"),
            "channel": summary["channel"],
            "device": summary["device_name"],
            "snippets": snippets(texts, words),
        }
        for summary, texts in found
    ]


class RecallConversationsTool(llm.Tool):
    """Search the conversation record by words and days."""

    name = RECALL_TOOL
    description = (
        "Search earlier conversations with the household for what was said:"
        " returns up to 5 conversations, newest first, with their date, device"
        " and short snippets. Use the distinctive words of the topic as query"
        " (a name, a title, a thing). To limit it to days, give `day`, or"
        " `from` and `to`, as ISO dates (YYYY-MM-DD); work out relative days"
        " like 'last week' from the current date. Give at most"
        f" {MAX_WORDS} words."
    )
    parameters = vol.Schema(
        {
            vol.Required("query", description="Words to look for"): str,
            vol.Optional("day", description="One day, YYYY-MM-DD"): str,
            vol.Optional("from", description="First day, YYYY-MM-DD"): str,
            vol.Optional("to", description="Last day, YYYY-MM-DD"): str,
        }
    )
    annotations = llm.ToolAnnotations(
        read_only=True, destructive=False, idempotent=True, open_world=False
    )
    integration = DOMAIN

    @override
    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> llm.ToolResult:
        """Answer the found conversations the asker may read, or `error: ...` text.

        The asker is the turn's user: a turn with none (a voice) reads only
        the household's conversations.
        """
        arguments = tool_input.tool_args
        session = chat_session.current_session.get()
        try:
            start, end = day_bounds(
                arguments.get("day"), arguments.get("from"), arguments.get("to")
            )
            conversations = await async_recall(
                hass.data[DATA_RECORD],
                str(arguments.get("query") or ""),
                reader=Reader(asker(llm_context)),
                start=start,
                end=end,
                exclude=session.conversation_id if session else None,
            )
        except RecallError as err:
            return llm.ToolResult(data={"result": f"error: {err}"}, error=True)
        except StoreError:
            return llm.ToolResult(
                data={"result": "error: the conversation record is not available"},
                error=True,
            )
        return llm.ToolResult(data={"conversations": conversations})
