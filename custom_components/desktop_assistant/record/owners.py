"""Whose each recorded conversation is: a user's, or the household's (NULL).

Functions of a connection, run on the store's thread. The rule of who may
read whose is `reader.py`'s; the record's queries apply it.
"""

from collections.abc import Iterable
import sqlite3


def conversation_owner(
    connection: sqlite3.Connection, conversation_id: str
) -> tuple[bool, str | None]:
    """Whether the conversation is recorded, and its owner's user id (None: the household)."""
    row = connection.execute(
        "SELECT user_id FROM conversations WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    return (False, None) if row is None else (True, row[0])


def set_owners(
    connection: sqlite3.Connection, owners: Iterable[tuple[str, str]]
) -> None:
    """Make each (conversation id, user id) conversation that user's.

    For a feature's migration that knows whose conversations were; the
    caller holds the transaction.
    """
    connection.executemany(
        "UPDATE conversations SET user_id = ? WHERE conversation_id = ?",
        [(user_id, conversation_id) for conversation_id, user_id in owners],
    )
