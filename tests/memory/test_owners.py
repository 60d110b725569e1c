"""Per-person memory: each member's pages stay theirs, the household's are everyone's.

Anna and Bruno are household members; a satellite (no user) is the
household. The prompt and the tools of a turn carry the household's pages
and the asker's own, never another member's; the panel shows whose each
page is and moves a page between a person and the household.
"""

import json
from typing import Any

from homeassistant.auth.models import User
from homeassistant.core import Context, HomeAssistant
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.memory import Memory
from custom_components.desktop_assistant.memory.context import PERSON_INSTRUCTIONS
from custom_components.desktop_assistant.memory.page_reads import (
    find_page,
    profile_page,
)
from custom_components.desktop_assistant.runtime import DATA_MEMORY
from tests.harness.agent import Agent
from tests.harness.llama_server import Reply, text_reply, tool_call_reply
from tests.harness.members import client_of, member
from tests.harness.schema import database_before, migrate_to_latest

pytestmark = pytest.mark.llm_apis(DOMAIN)

REMEMBER = f"{DOMAIN}__remember"
RECALL = f"{DOMAIN}__recall"
FORGET = f"{DOMAIN}__forget"


@pytest.fixture
async def members(hass: HomeAssistant, hass_admin_user: User) -> dict[str, User]:
    """Anna and Bruno, after Home Assistant's owner (an administrator)."""
    return {"anna": await member(hass, "Anna"), "bruno": await member(hass, "Bruno")}


def memory_of(hass: HomeAssistant) -> Memory:
    return hass.data[DATA_MEMORY]


def system_prompt(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"]


def tool_answer(request: dict[str, Any]) -> str:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"][-1]


async def call_tool(
    agent: Agent, user: User | None, tool: str, args: dict[str, str]
) -> str:
    """A turn of `user` (None: a voice) in which the model calls `tool`; its answer."""
    agent.server.script += [
        tool_call_reply((tool, json.dumps(args))),
        text_reply("Done."),
    ]
    await agent.ask("Please.", context=Context(user_id=user.id if user else None))
    return tool_answer(agent.server.chat_requests[-1])


async def prompt_of(agent: Agent, user: User | None) -> str:
    """The system prompt llama-server gets in a new turn of `user`."""
    agent.server.script.append(text_reply("Hello."))
    await agent.ask("Hello?", context=Context(user_id=user.id if user else None))
    return system_prompt(agent.server.chat_requests[-1])


async def test_a_members_remember_lands_on_their_profile_and_prompt_only(
    hass: HomeAssistant, agent: Agent, members: dict[str, User]
) -> None:
    anna, bruno = members["anna"], members["bruno"]
    answer = await call_tool(
        agent, anna, REMEMBER, {"page": "profile", "fact": "Anna is allergic to nuts"}
    )
    assert "allergic to nuts" in answer
    own = await memory_of(hass).async_read(lambda db: profile_page(db, anna.id))
    assert own is not None and "allergic to nuts" in own.text
    household = await memory_of(hass).async_read(profile_page)
    assert household is None or "allergic" not in household.text

    assert "allergic to nuts" in await prompt_of(agent, anna)
    # Bruno has no page yet: the household's, told as a person's own.
    brunos = await prompt_of(agent, bruno)
    assert "allergic" not in brunos
    assert PERSON_INSTRUCTIONS in brunos and "Profile of the person asking" in brunos
    household = await prompt_of(agent, None)
    assert "allergic" not in household and PERSON_INSTRUCTIONS not in household


async def test_what_do_you_remember_about_me_and_forget_that(
    hass: HomeAssistant, agent: Agent, members: dict[str, User]
) -> None:
    """A member hears their own profile, and forgets a fact of it; no one else can."""
    anna, bruno = members["anna"], members["bruno"]
    for fact in ("Anna is allergic to nuts", "Anna plays the cello"):
        await call_tool(agent, anna, REMEMBER, {"page": "profile", "fact": fact})
    about_anna = await call_tool(agent, anna, RECALL, {"query": "profile"})
    assert "allergic to nuts" in about_anna and "cello" in about_anna
    offered = {t["function"]["name"] for t in agent.server.chat_requests[-1]["tools"]}
    assert FORGET in offered

    forget = {"page": "profile", "fact": "allergic to nuts"}
    assert (await call_tool(agent, bruno, FORGET, forget)).startswith("error:")
    assert "allergic to nuts" in await prompt_of(agent, anna)
    assert "Forgot 1 line" in await call_tool(agent, anna, FORGET, forget)
    prompt = await prompt_of(agent, anna)
    assert "allergic" not in prompt and "cello" in prompt
    # A voice turn is offered no forget: the household's pages are the panel's.
    await prompt_of(agent, None)
    offered = {t["function"]["name"] for t in agent.server.chat_requests[-1]["tools"]}
    assert FORGET not in offered
    own = await memory_of(hass).async_read(lambda db: profile_page(db, anna.id))
    assert own.revision > 0 and "allergic" not in own.text


async def test_a_household_fact_said_by_a_member_is_everyones(
    hass: HomeAssistant, agent: Agent, members: dict[str, User]
) -> None:
    fact = {"page": "profile", "fact": "The wifi password is on the fridge"}
    await call_tool(agent, members["anna"], REMEMBER, fact | {"for": "household"})
    for user in (members["anna"], members["bruno"], None):
        assert "wifi password is on the fridge" in await prompt_of(agent, user)


async def test_recall_reads_the_askers_pages_and_the_households(
    hass: HomeAssistant, agent: Agent, members: dict[str, User]
) -> None:
    """Two members may each have a page of the same name; each reads their own."""
    anna, bruno = members["anna"], members["bruno"]
    await call_tool(agent, anna, REMEMBER, {"page": "Doctor", "fact": "Dr. Rossi"})
    await call_tool(agent, bruno, REMEMBER, {"page": "Doctor", "fact": "Dr. Weber"})
    await call_tool(agent, None, REMEMBER, {"page": "Vet", "fact": "Dr. Okafor"})

    annas = await call_tool(agent, anna, RECALL, {"query": "Doctor"})
    assert "Rossi" in annas and "Weber" not in annas
    brunos = await call_tool(agent, bruno, RECALL, {"query": "Rossi"})
    assert "Rossi" not in brunos
    voice = await call_tool(agent, None, RECALL, {"query": "Doctor Rossi Weber Okafor"})
    assert "Okafor" in voice and "Rossi" not in voice and "Weber" not in voice
    assert "Doctor" not in await prompt_of(agent, None)
    assert "Dr. Rossi" not in await prompt_of(agent, bruno)


async def test_a_page_moved_while_a_turn_reads_it(
    hass: HomeAssistant, agent: Agent, members: dict[str, User], hass_ws_client: Any
) -> None:
    """The household's page becomes Anna's during Bruno's turn: his recall misses it."""
    await call_tool(agent, None, REMEMBER, {"page": "Gift", "fact": "A red bicycle"})
    gift = await memory_of(hass).async_read(lambda db: find_page(db, "Gift"))
    admin = await hass_ws_client(hass)

    async def moved_then_recall() -> Reply:
        await admin.send_json_auto_id(
            {
                "type": f"{DOMAIN}/memory/pages/move",
                "page_id": gift.id,
                "owner": members["anna"].id,
            }
        )
        assert (await admin.receive_json())["success"]
        return tool_call_reply((RECALL, '{"query": "Gift bicycle"}'))

    agent.server.script += [moved_then_recall, text_reply("Nothing.")]
    await agent.ask("The gift?", context=Context(user_id=members["bruno"].id))
    assert "Gift" in system_prompt(agent.server.chat_requests[-2])
    assert "bicycle" not in tool_answer(agent.server.chat_requests[-1])
    assert "bicycle" not in await prompt_of(agent, members["bruno"])
    assert "bicycle" in await prompt_of(agent, members["anna"])


async def command(client: Any, type_: str, **fields: Any) -> dict[str, Any]:
    await client.send_json_auto_id({"type": f"{DOMAIN}/memory/{type_}", **fields})
    return await client.receive_json()


async def test_the_panel_shows_whose_and_moves_pages_revertibly(
    hass: HomeAssistant, agent: Agent, members: dict[str, User], hass_ws_client: Any
) -> None:
    anna = members["anna"]
    await call_tool(agent, anna, REMEMBER, {"page": "Garden", "fact": "Roses by May"})
    admin = await hass_ws_client(hass)
    listed = (await command(admin, "pages/list"))["result"]["pages"]
    (garden,) = [page for page in listed if page["name"] == "Garden"]
    assert garden["user_id"] == anna.id

    moved = await command(
        admin, "pages/move", page_id=garden["page_id"], owner="household"
    )
    assert moved["result"]["user_id"] is None
    assert moved["result"]["revisions"][0]["user_id"] is None
    assert "Roses by May" in await prompt_of(agent, members["bruno"])
    before = moved["result"]["revisions"][1]["revision"]
    reverted = await command(
        admin, "pages/restore_revision", page_id=garden["page_id"], revision=before
    )
    assert reverted["result"]["user_id"] == anna.id
    assert "Roses" not in await prompt_of(agent, members["bruno"])


async def test_forged_owners_and_a_former_member(
    hass: HomeAssistant, agent: Agent, members: dict[str, User], hass_ws_client: Any
) -> None:
    """A user id nobody has is refused; a deleted member's pages stay theirs."""
    anna = members["anna"]
    await call_tool(agent, anna, REMEMBER, {"page": "Books", "fact": "Reads Calvino"})
    await call_tool(agent, anna, REMEMBER, {"page": "profile", "fact": "Likes tea"})
    admin = await hass_ws_client(hass)
    pages = (await command(admin, "pages/list"))["result"]["pages"]
    books = next(page for page in pages if page["name"] == "Books")
    profile = next(p for p in pages if p["type"] == "profile" and p["user_id"])

    forged = await command(
        admin, "pages/move", page_id=books["page_id"], owner="0" * 32
    )
    assert forged["error"]["code"] == "not_found"
    refused = await command(
        admin, "pages/move", page_id=profile["page_id"], owner="household"
    )
    assert refused["error"]["code"] == "profile"

    await hass.auth.async_remove_user(anna)
    pages = (await command(admin, "pages/list"))["result"]["pages"]
    assert {p["user_id"] for p in pages if p["name"] in ("Books", "Profile")} >= {
        anna.id
    }
    await admin.send_json_auto_id({"type": f"{DOMAIN}/panel/describe"})
    described = (await admin.receive_json())["result"]
    assert anna.id not in {m["user_id"] for m in described["members"]}
    back = await command(admin, "pages/move", page_id=books["page_id"], owner=anna.id)
    assert back["error"]["code"] == "not_found"
    kept = await command(
        admin, "pages/move", page_id=books["page_id"], owner="household"
    )
    assert kept["result"]["user_id"] is None


async def test_a_member_cannot_use_the_panels_move(
    hass: HomeAssistant, agent: Agent, members: dict[str, User], hass_ws_client: Any
) -> None:
    await call_tool(agent, None, REMEMBER, {"page": "Gift", "fact": "A kite"})
    gift = await memory_of(hass).async_read(lambda db: find_page(db, "Gift"))
    bruno = await client_of(hass, hass_ws_client, members["bruno"])
    refused = await command(
        bruno, "pages/move", page_id=gift.id, owner=members["bruno"].id
    )
    assert refused["error"]["code"] == "unauthorized"


def test_pages_from_before_stay_the_households_with_their_revisions() -> None:
    """Migration 13 on a memory with pages, revisions and a nightly run."""
    connection = database_before(
        13,
        "INSERT INTO pages (id, name, kind, text, created_at, updated_at, revision)"
        " VALUES (1, 'Anouk', 'person', 'Sara''s sister.', 1, 2, 2),"
        " (2, 'Profile', 'profile', 'We live in Leiden.', 1, 1, 3);"
        "INSERT INTO page_names VALUES ('anouk', 1, 'Anouk', 0);"
        "INSERT INTO page_revisions (id, page, at, author, name, kind, aliases,"
        " text) VALUES (1, 1, 1, 'remember', 'Anouk', 'person', '[]', 'Sister.'),"
        " (2, 1, 2, 'nightly', 'Anouk', 'person', '[]', 'Sara''s sister.'),"
        " (3, 2, 1, 'person', 'Profile', 'profile', '[]', 'We live in Leiden.');"
        "INSERT INTO nightly_runs (id, detail) VALUES (7, '{}');"
        "INSERT INTO nightly_run_pages (run, page, page_name, action, before_text,"
        " after_text) VALUES (7, 1, 'Anouk', 'updated', 'Sister.', 'Sara''s sister.');",
    )
    migrate_to_latest(connection)

    assert connection.execute(
        "SELECT id, user_id FROM pages ORDER BY id"
    ).fetchall() == [
        (1, None),
        (2, None),
    ]
    assert connection.execute(
        "SELECT page, text, user_id FROM page_revisions ORDER BY id"
    ).fetchall() == [
        (1, "Sister.", None),
        (1, "Sara's sister.", None),
        (2, "We live in Leiden.", None),
    ]
    assert connection.execute("SELECT count(*) FROM nightly_run_pages").fetchone()[0]
    # Everyone reads them: a member, and a turn of no user.
    for user_id in ("anna", None):
        assert find_page(connection, "Anouk", user_id).id == 1
        assert profile_page(connection).text == "We live in Leiden."
