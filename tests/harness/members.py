"""Household members in Home Assistant's harness: users, and their websocket clients."""

from typing import Any

from homeassistant.auth.models import User
from homeassistant.core import HomeAssistant


async def member(hass: HomeAssistant, name: str) -> User:
    """A new household member: a user who is not an administrator.

    The first user Home Assistant has is its owner, an administrator: a
    test asks for `hass_admin_user` (or a websocket client) first.
    """
    user = await hass.auth.async_create_user(name, group_ids=["system-users"])
    assert not user.is_admin
    return user


async def client_of(hass: HomeAssistant, hass_ws_client: Any, user: User) -> Any:
    """A websocket client signed in as `user`."""
    refresh = await hass.auth.async_create_refresh_token(user, "https://members/")
    return await hass_ws_client(hass, hass.auth.async_create_access_token(refresh))
