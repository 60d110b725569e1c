"""Who may do what only an administrator decides.

That is running a tool file directly, outside an agent's conversation, and
running the nightly pass of memory.

The run_tool action and the tool intents run a tool at once, a changing one
included: an automation, a script or a custom sentence is its author's
decision. A signed-in person who is not an administrator may not decide
that; an agent's tool call (llm.py) still asks the person for a yes.
"""

from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized, UnknownUser


async def async_may_act(hass: HomeAssistant, context: Context) -> bool:
    """Whether the caller may do what an administrator decides.

    Yes with no user (automations, triggers) or a system user (HA's own
    integrations, the supervisor), and for an administrator; no for any
    other user, and for a user id nobody has.
    """
    if context.user_id is None:
        return True
    user = await hass.auth.async_get_user(context.user_id)
    return user is not None and (user.is_admin or user.system_generated)


async def async_check_may_act(hass: HomeAssistant, context: Context) -> None:
    """Refuse an action's caller as HA's admin-only actions do, unless it may act.

    Unauthorized, or UnknownUser for a user id nobody has: the websocket
    answers `unauthorized`, as for async_register_admin_service.
    """
    if await async_may_act(hass, context):
        return
    if await hass.auth.async_get_user(context.user_id or "") is None:
        raise UnknownUser(context=context)
    raise Unauthorized(context=context)
