"""The household's members, as the panel names whose a conversation or page is.

A member is a user who signs in (not one Home Assistant made for itself),
named as their person is, else as their user. A user id that is no
member's any more (the person and user deleted) is a former member's: what
they owned stays, and an administrator decides what becomes of it.
"""

from typing import Any

from homeassistant.core import HomeAssistant


async def async_members(hass: HomeAssistant) -> list[dict[str, Any]]:
    """Every member's user id and name, by name."""
    persons = {
        state.attributes.get("user_id"): state.name
        for state in hass.states.async_all("person")
    }
    members = [
        {"user_id": user.id, "name": persons.get(user.id) or user.name or user.id}
        for user in await hass.auth.async_get_users()
        if not user.system_generated
    ]
    return sorted(members, key=lambda member: member["name"].casefold())


async def async_is_member(hass: HomeAssistant, user_id: str) -> bool:
    """Whether `user_id` is a member's now (a forged or deleted one is not)."""
    user = await hass.auth.async_get_user(user_id)
    return user is not None and not user.system_generated
