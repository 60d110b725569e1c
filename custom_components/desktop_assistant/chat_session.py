"""Home Assistant's chat session, opened for whom a turn acts, on every supported version.

Home Assistant 2026.11 gives a session an owner, the user of the context that
first opens it, refuses another user's context, and reports a call without a
context (breaking in 2027.5). 2026.10 has no owners and takes no context.
Which one runs here is read from the function itself, never from a version.
"""

from collections.abc import Generator
import contextlib
import inspect

from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session

# Whether sessions have owners: the helper takes the opener's context.
SESSIONS_HAVE_OWNERS = (
    "context" in inspect.signature(chat_session.async_get_chat_session).parameters
)


@contextlib.contextmanager
def async_get_chat_session(
    hass: HomeAssistant, conversation_id: str | None, context: Context | None
) -> Generator[chat_session.ChatSession]:
    """The conversation's session, opened with `context` where sessions have owners.

    None is a caller that acts for no user (a satellite, a test's Assist).
    """
    if SESSIONS_HAVE_OWNERS:
        opened = chat_session.async_get_chat_session(
            hass, conversation_id, context=context
        )
    else:
        opened = chat_session.async_get_chat_session(hass, conversation_id)
    with opened as session:
        yield session
