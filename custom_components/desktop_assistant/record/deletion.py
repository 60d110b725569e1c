"""Deleting conversations from the record: one, by age, or by each entry's retention.

Functions of a database connection, run on the store's thread; a
conversation's entries and words go with it (foreign keys and triggers).
"""

from collections.abc import Iterable
import sqlite3

from ..store import transaction


def delete_conversation(connection: sqlite3.Connection, conversation_id: str) -> bool:
    """Delete a conversation, its entries and its words; False when unknown."""
    with transaction(connection):
        deleted = connection.execute(
            "DELETE FROM conversations WHERE conversation_id = ?", (conversation_id,)
        ).rowcount
    return deleted > 0


def delete_inactive_since(
    connection: sqlite3.Connection,
    cutoffs: Iterable[tuple[str, float]],
    default_cutoff: float | None,
    keep: Iterable[str] = (),
) -> int:
    """Delete conversations last active before their cutoff; return how many.

    `cutoffs` gives a cutoff per config entry; conversations of other entries
    (removed ones) use `default_cutoff`, None keeping them. Conversations in
    `keep` (a turn is running) stay.
    """
    keep = list(keep)
    kept = f"conversation_id NOT IN ({','.join('?' * len(keep))})"
    deleted = 0
    known: list[str] = []
    with transaction(connection):
        for entry_id, cutoff in cutoffs:
            known.append(entry_id)
            deleted += connection.execute(
                f"DELETE FROM conversations WHERE config_entry_id = ?"
                f" AND last_activity_at < ? AND {kept}",
                (entry_id, cutoff, *keep),
            ).rowcount
        if default_cutoff is not None:
            others = f"config_entry_id NOT IN ({','.join('?' * len(known))})"
            deleted += connection.execute(
                f"DELETE FROM conversations WHERE (config_entry_id IS NULL"
                f" OR {others}) AND last_activity_at < ? AND {kept}",
                (*known, default_cutoff, *keep),
            ).rowcount
    return deleted


def delete_conversations_before(
    connection: sqlite3.Connection, cutoff: float, keep: Iterable[str] = ()
) -> int:
    """Delete every conversation last active before `cutoff`, except `keep`."""
    keep = list(keep)
    with transaction(connection):
        return connection.execute(
            "DELETE FROM conversations WHERE last_activity_at < ?"
            f" AND conversation_id NOT IN ({','.join('?' * len(keep))})",
            (cutoff, *keep),
        ).rowcount
