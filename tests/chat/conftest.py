"""Fixtures and helpers for chat's tests: users, their websocket clients, a turn."""

from collections.abc import Awaitable, Callable
from typing import Any

from homeassistant.core import HomeAssistant
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.members import client_of, member

type Client = Any
type ClientOf = Callable[[str], Awaitable[Client]]


async def command(client: Client, type_: str, **fields: Any) -> dict[str, Any]:
    """Send a chat command; its answer."""
    await client.send_json_auto_id({"type": f"{DOMAIN}/chat/{type_}", **fields})
    return await client.receive_json()


async def subscribe(client: Client, thread_id: str) -> int:
    """Subscribe to the thread's events; the subscription's id."""
    await client.send_json_auto_id(
        {"type": f"{DOMAIN}/chat/subscribe", "thread_id": thread_id}
    )
    reply = await client.receive_json()
    assert reply["success"], reply
    return reply["id"]


async def events_until_end(client: Client) -> list[dict[str, Any]]:
    """The subscription's events up to and with the turn's end."""
    events = []
    while True:
        message = await client.receive_json()
        assert message["type"] == "event", message
        events.append(message["event"])
        if message["event"]["type"] == "end":
            return events


@pytest.fixture
async def member_client(
    hass: HomeAssistant, hass_ws_client: Any
) -> Callable[[str], Awaitable[Client]]:
    """A websocket client of a new household member (not an admin), by name."""

    async def client_of_member(name: str) -> Client:
        return await client_of(hass, hass_ws_client, await member(hass, name))

    return client_of_member
