"""The panel's websocket commands and the delete_conversations action."""

import asyncio
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.util import dt as dt_util
import pytest
import voluptuous as vol
import yaml

import custom_components.desktop_assistant
from custom_components.desktop_assistant.const import DOMAIN, MAX_RETENTION_DAYS
from custom_components.desktop_assistant.record import Record
from tests.harness.agent import Agent
from tests.harness.llama_server import text_reply

from .conftest import index_rows, listed, seed, stored

DAY = 86400.0


async def command(client: Any, type_: str, **fields: Any) -> dict[str, Any]:
    await client.send_json_auto_id(
        {"type": f"{DOMAIN}/conversations/{type_}", **fields}
    )
    return await client.receive_json()


async def all_pages(client: Any, **filters: Any) -> tuple[list[str], int]:
    """Every conversation id the list gives, page by page, and the page count."""
    ids: list[str] = []
    pages = 0
    cursor = None
    while True:
        fields = filters | ({"before": cursor} if cursor else {})
        reply = await command(client, "list", **fields)
        assert reply["success"], reply
        pages += 1
        ids += [c["conversation_id"] for c in reply["result"]["conversations"]]
        if (cursor := reply["result"]["next"]) is None:
            return ids, pages


@pytest.fixture
async def seeded(hass: HomeAssistant, record: Record) -> list[str]:
    """25 conversations a minute apart: voice on two devices and text; newest first."""
    now = dt_util.utcnow().timestamp()
    ids = []
    for n in range(25):
        channel = "voice" if n % 2 else "text"
        device = (
            (("kitchen-id", "Kitchen") if n % 4 == 1 else ("hall-id", "Hall"))
            if channel == "voice"
            else None
        )
        topic = "lasagna" if n % 3 == 0 else "weather"
        conversation_id = f"c{n:02}"
        await seed(
            hass,
            conversation_id,
            now - DAY + 60 * n,
            f"Question {n} about {topic}",
            f"Answer {n}",
            channel=channel,
            device=device,
        )
        ids.append(conversation_id)
    return ids[::-1]


async def test_list_pages_newest_first_with_filters_across_pages(
    hass: HomeAssistant, hass_ws_client: Any, seeded: list[str]
) -> None:
    client = await hass_ws_client(hass)
    reply = await command(client, "list", limit=10)
    first = reply["result"]["conversations"]
    assert [c["conversation_id"] for c in first] == seeded[:10]
    assert first[0] | {"started_at": None, "last_activity_at": None} == {
        "conversation_id": "c24",
        "agent_id": "conversation.seeded",
        "channel": "text",
        "device_id": None,
        "device_name": None,
        "language": "en",
        "started_at": None,
        "last_activity_at": None,
        "status": "active",
        "first_words": "Question 24 about lasagna",
        "user_id": None,
        "in_progress": False,
    }
    assert await all_pages(client, limit=10) == (seeded, 3)

    voice = [i for i in seeded if int(i[1:]) % 2]
    assert await all_pages(client, limit=4, channel="voice") == (voice, 3)
    kitchen = [i for i in seeded if int(i[1:]) % 4 == 1]
    assert await all_pages(client, limit=2, device_id="kitchen-id") == (
        kitchen,
        (len(kitchen) + 1) // 2,
    )
    lasagna = [i for i in seeded if int(i[1:]) % 3 == 0]
    assert await all_pages(client, limit=3, query="Lasagna") == (lasagna, 3)
    both = [i for i in lasagna if int(i[1:]) % 2]
    assert await all_pages(client, limit=1, query="lasagna", channel="voice") == (
        both,
        len(both),
    )
    # Every word must be there.
    assert await all_pages(client, query="lasagna answer 9") == (["c09"], 1)
    assert await all_pages(client, query="lasagna weather") == ([], 1)


async def test_get_gives_the_entries_and_errors(
    hass: HomeAssistant, hass_ws_client: Any, seeded: list[str]
) -> None:
    client = await hass_ws_client(hass)
    reply = await command(client, "get", conversation_id="c03")
    assert reply["success"]
    assert [(e["kind"], e["text"]) for e in reply["result"]["entries"]] == [
        ("user", "Question 3 about lasagna"),
        ("assistant", "Answer 3"),
    ]
    assert reply["result"]["device_name"] == "Hall"
    reply = await command(client, "get", conversation_id="nope")
    assert reply["error"]["code"] == "not_found"
    reply = await command(client, "list", before="not a cursor")
    assert reply["error"]["code"] == "invalid_format"


@pytest.mark.parametrize(
    "before",
    [
        "9" * 30,
        str(2**63),
        "9" * 5000,
        "-1",
        " 12",
        "1_000",
        "١٢",  # Arabic-Indic digits: int() reads them, encode_cursor never writes them
        "",
    ],
    ids=[
        "30 digits",
        "2**63",
        "5000 digits",
        "negative",
        "space",
        "underscore",
        "other digits",
        "empty",
    ],
)
async def test_a_cursor_no_page_gave_is_invalid_format(
    hass: HomeAssistant, hass_ws_client: Any, seeded: list[str], before: str
) -> None:
    client = await hass_ws_client(hass)
    reply = await command(client, "list", before=before)
    assert reply["error"] == {
        "code": "invalid_format",
        "message": "`before` is not a cursor",
    }
    # The largest cursor is one, and the connection goes on.
    reply = await command(client, "list", before=str(2**63 - 1), limit=2)
    assert [c["conversation_id"] for c in reply["result"]["conversations"]] == [
        "c24",
        "c23",
    ]


async def test_a_search_of_more_than_12_words_is_refused(
    hass: HomeAssistant, hass_ws_client: Any, seeded: list[str]
) -> None:
    client = await hass_ws_client(hass)
    many = " ".join(f"w{n:03}" for n in range(180))
    reply = await command(client, "list", query=many)
    assert reply["error"] == {
        "code": "invalid_format",
        "message": "Search for at most 12 words",
    }
    # Twelve are searched; a word repeated counts once.
    twelve = ["lasagna"] * 50 + [f"w{n}" for n in range(11)]
    reply = await command(client, "list", query=" ".join(twelve))
    assert reply["result"] == {"conversations": [], "next": None}
    reply = await command(client, "list", query=" ".join([*twelve, "w11"]))
    assert reply["error"]["code"] == "invalid_format"
    assert await all_pages(client, query="lasagna " * 40) == (
        [f"c{n:02}" for n in range(24, -1, -1) if n % 3 == 0],
        1,
    )


async def test_delete_and_not_found(
    hass: HomeAssistant, hass_ws_client: Any, seeded: list[str]
) -> None:
    client = await hass_ws_client(hass)
    assert (await command(client, "delete", conversation_id="c00"))["success"]
    assert await stored(hass, "c00") is None
    reply = await command(client, "delete", conversation_id="c00")
    assert reply["error"]["code"] == "not_found"
    assert len(await listed(hass)) == 24


async def test_commands_are_for_admins_only(
    hass: HomeAssistant,
    hass_ws_client: Any,
    hass_read_only_access_token: str,
    seeded: list[str],
) -> None:
    client = await hass_ws_client(hass, hass_read_only_access_token)
    for type_, fields in (
        ("list", {}),
        ("get", {"conversation_id": "c01"}),
        ("delete", {"conversation_id": "c01"}),
    ):
        reply = await command(client, type_, **fields)
        assert reply["error"]["code"] == "unauthorized", type_
    assert await stored(hass, "c01") is not None


async def test_a_conversation_with_a_running_turn_is_not_deleted(
    hass: HomeAssistant, hass_ws_client: Any, agent: Agent
) -> None:
    agent.server.script = [text_reply("First.")]
    conversation_id = (await agent.ask("Hello")).conversation_id
    agent.server.script = [text_reply("Slow answer.", delay=0.5)]
    turn = asyncio.create_task(agent.ask("And now?", conversation_id))
    client = await hass_ws_client(hass)
    for _ in range(3000):  # until the server has the question
        if agent.server.received_at[1:]:
            break
        await asyncio.sleep(0.01)

    reply = await command(client, "delete", conversation_id=conversation_id)
    assert reply["error"]["code"] == "in_progress"
    listing = await command(client, "list")
    assert listing["result"]["conversations"][0]["in_progress"] is True
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call(
            DOMAIN,
            "delete_conversations",
            {"conversation_id": conversation_id},
            blocking=True,
        )
    assert raised.value.translation_key == "conversation_in_progress"

    await turn
    assert (await command(client, "delete", conversation_id=conversation_id))["success"]
    assert await stored(hass, conversation_id) is None


async def test_the_delete_action(hass: HomeAssistant, record: Record) -> None:
    now = dt_util.utcnow().timestamp()
    await seed(hass, "old", now - 40 * DAY, "the quokka")
    await seed(hass, "older", now - 400 * DAY, "the quokka again")
    await seed(hass, "new", now - 2 * DAY, "the numbat")

    response = await hass.services.async_call(
        DOMAIN,
        "delete_conversations",
        {"older_than_days": 30},
        blocking=True,
        return_response=True,
    )
    assert response == {"deleted": 2}
    assert [c["conversation_id"] for c in await listed(hass)] == ["new"]
    assert await index_rows(hass, "quokka") == 0

    response = await hass.services.async_call(
        DOMAIN,
        "delete_conversations",
        {"conversation_id": "new"},
        blocking=True,
        return_response=True,
    )
    assert response == {"deleted": 1}
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call(
            DOMAIN, "delete_conversations", {"conversation_id": "new"}, blocking=True
        )
    assert raised.value.translation_key == "conversation_not_found"


@pytest.mark.parametrize("days", [-1, 1e6, "inf", "nan"])
async def test_the_delete_action_refuses_an_age_beyond_the_record(
    hass: HomeAssistant, record: Record, days: Any
) -> None:
    await seed(hass, "old", dt_util.utcnow().timestamp() - 40 * DAY, "the quokka")
    with pytest.raises(vol.Invalid, match="older_than_days"):
        await hass.services.async_call(
            DOMAIN, "delete_conversations", {"older_than_days": days}, blocking=True
        )
    assert [c["conversation_id"] for c in await listed(hass)] == ["old"]


def test_the_delete_actions_form_allows_what_its_schema_does() -> None:
    services = yaml.safe_load(
        (
            Path(custom_components.desktop_assistant.__file__).parent / "services.yaml"
        ).read_text()
    )
    number = services["delete_conversations"]["fields"]["older_than_days"]
    assert number["selector"]["number"]["max"] == MAX_RETENTION_DAYS
