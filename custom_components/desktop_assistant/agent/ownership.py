"""The conversation a turn goes on in: the asker's own, never another's.

Every door that reaches our agent (`conversation/process`, the Assist
pipeline, the `conversation.process` action, Chat) names a conversation id
that anyone can type. A turn goes on only in a conversation of its own
asker (a member's in their own, a satellite's or an automation's in the
household's); any other id starts a new conversation instead: it gets none
of that conversation's history and writes nothing into it. A member's
words in a household conversation would be the household's, readable by
every member: what a member types stays theirs. Home
Assistant 2026.11 checks a session's owner itself when given the turn's
context; on 2026.10 this is the only check.

Whose a conversation is comes from the conversations Home Assistant holds
now (kept here while their session lives), then Chat's threads, then the
record.
"""

from collections.abc import Awaitable, Callable
import dataclasses

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.chat_session import ChatSession
from homeassistant.util.hass_dict import HassKey

from ..chat import database as chat_database
from ..chat_session import async_get_chat_session
from ..const import DOMAIN
from ..record import owners as record_owners
from ..runtime import DATA_RECORD
from ..store import StoreError

# The owner (a user id, None for the household) of each conversation a turn
# of ours went on in, while Home Assistant holds its session.
DATA_OWNERS: HassKey[dict[str, str | None]] = HassKey(f"{DOMAIN}_conversation_owners")

type Owner = tuple[bool, str | None]


async def async_owner(hass: HomeAssistant, conversation_id: str) -> Owner:
    """Whether the conversation is known, and whose it is (None: the household's).

    A store fault says unknown: Home Assistant's own memory of a
    conversation is then what the turn may continue, as before.
    """
    if conversation_id in (owners := hass.data.get(DATA_OWNERS, {})):
        return True, owners[conversation_id]
    if (record := hass.data.get(DATA_RECORD)) is None or not record.available:
        return False, None
    try:
        thread = await record.async_read(
            lambda db: chat_database.get_thread(db, conversation_id)
        )
        if thread is not None:
            return True, thread["user_id"]
        return await record.async_read(
            lambda db: record_owners.conversation_owner(db, conversation_id)
        )
    except StoreError:
        return False, None


async def async_own_input(
    hass: HomeAssistant, user_input: conversation.ConversationInput
) -> tuple[conversation.ConversationInput, str | None]:
    """The turn's input, in a new conversation if its id is someone else's.

    Also whose the conversation it goes on in is: the asker's (None: the
    household's).
    """
    user_id = user_input.context.user_id
    if user_input.conversation_id is None:
        return user_input, user_id
    known, owner = await async_owner(hass, user_input.conversation_id)
    if known and owner != user_id:
        return dataclasses.replace(user_input, conversation_id=None), user_id
    return user_input, user_id


@callback
def async_keep_owner(
    hass: HomeAssistant, session: ChatSession, owner: str | None
) -> None:
    """Keep whose the session's conversation is while Home Assistant holds it.

    A turn's record is written when it ends, and an agent may keep none: a
    conversation this new is known only here.
    """
    owners = hass.data.setdefault(DATA_OWNERS, {})
    if session.conversation_id in owners:
        return
    owners[session.conversation_id] = owner
    session.async_on_cleanup(lambda: owners.pop(session.conversation_id, None))


async def async_process_owned(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    handle: Callable[
        [conversation.ConversationInput, conversation.ChatLog],
        Awaitable[conversation.ConversationResult],
    ],
) -> conversation.ConversationResult:
    """Run `handle` as ConversationEntity.async_process does, in the asker's own conversation."""
    user_input, owner = await async_own_input(hass, user_input)
    with (
        async_get_chat_session(
            hass, user_input.conversation_id, user_input.context
        ) as session,
        conversation.async_get_chat_log(hass, session, user_input) as chat_log,
    ):
        async_keep_owner(hass, session, owner)
        return await handle(user_input, chat_log)
