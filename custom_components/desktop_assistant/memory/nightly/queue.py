"""Which quiet conversations wait for extraction: the record read page by page."""

from datetime import datetime
from typing import Final

from ...reader import CURATOR
from ...record import Record, database
from ..memory import Memory
from . import extraction

# Conversations read per query.
QUEUE_PAGE: Final = 500


async def async_queue_unread(record: Record, memory: Memory) -> None:
    """Queue every quiet conversation with entries extraction has not read.

    Before each nightly pass this also finds a conversation that could not
    be queued when it went quiet (the database was locked then).
    """
    before = None
    while True:
        found, before = await record.async_read(
            lambda connection, cursor=before: database.list_conversations(
                connection, reader=CURATOR, limit=QUEUE_PAGE, before=cursor
            )
        )
        quiet = [
            (c["conversation_id"], datetime.fromisoformat(c["last_activity_at"]))
            for c in found
            if c["status"] == "quiet"
        ]
        await memory.async_write(
            lambda connection, now, ids=quiet: extraction.enqueue_unread(
                connection, ids, now
            )
        )
        if before is None:
            return
