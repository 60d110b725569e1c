"""Home Assistant's chat session opened for a user, on the version this leg runs."""

from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized
import pytest

from custom_components.desktop_assistant.chat_session import (
    SESSIONS_HAVE_OWNERS,
    async_get_chat_session,
)


async def test_a_session_is_its_first_users_where_sessions_have_owners(
    hass: HomeAssistant,
) -> None:
    alice, bob = Context(user_id="alice"), Context(user_id="bob")
    with async_get_chat_session(hass, None, alice) as session:
        conversation_id = session.conversation_id
    if SESSIONS_HAVE_OWNERS:
        # 2026.11 and later: Bob may not continue Alice's conversation.
        with (
            pytest.raises(Unauthorized),
            async_get_chat_session(hass, conversation_id, bob),
        ):
            pass
    else:
        with async_get_chat_session(hass, conversation_id, bob) as session:
            assert session.conversation_id == conversation_id
    # A caller that acts for no user (a satellite) continues it on both.
    with async_get_chat_session(hass, conversation_id, None) as session:
        assert session.conversation_id == conversation_id
