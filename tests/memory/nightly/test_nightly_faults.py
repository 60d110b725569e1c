"""The nightly pass when things go wrong: long input, failing answers, cancels.

Every run ends `ok`, `failed` (with why) or `cancelled`, with every change it
made in its record; one conversation never blocks the others.
"""

import asyncio
from collections.abc import Callable
import json
from typing import Any

from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import Unauthorized, UnknownUser
from homeassistant.helpers import issue_registry as ir
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.memory import Memory
from custom_components.desktop_assistant.memory.nightly import runs
from custom_components.desktop_assistant.memory.nightly.consolidation import PLAN_CHARS
from custom_components.desktop_assistant.memory.nightly.prompts import PART_NOTE
from custom_components.desktop_assistant.memory.nightly.revert import revert_page
from custom_components.desktop_assistant.memory.page_reads import (
    find_page,
    profile_page,
)
from custom_components.desktop_assistant.runtime import (
    DATA_MEMORY,
    DATA_NIGHTLY_JOB,
    DATA_RECORD,
)
from tests.harness.agent import Agent
from tests.harness.llama_server import Reply, error_body, text_reply
from tests.harness.memory_seed import Said, add_conversation, add_page, nightly_runs

pytestmark = pytest.mark.llm_apis(DOMAIN)

AT = 1_795_000_000.0
NO_PLAN = {"rewrite": [], "create": [], "merge": []}
NO_NOTES = {"notes": []}
# The context of a small model, in tokens, as llama-server counts them here
# (characters / 4, as the integration estimates).
N_CTX = 4096


def answer(data: dict[str, Any]) -> Reply:
    return text_reply(json.dumps(data))


def too_long(request: dict[str, Any]) -> bool:
    return sum(len(message["content"]) for message in request["messages"]) // 4 > N_CTX


def exceeded(request: dict[str, Any]) -> Reply:
    """llama-server's answer to a request larger than its context."""
    return Reply(
        status=400,
        body=error_body(
            400,
            "the request exceeds the available context size, try increasing it",
            "exceed_context_size_error",
        ),
    )


def model(
    notes: Callable[[dict[str, Any]], dict[str, Any]] = lambda request: NO_NOTES,
    plan: Callable[[dict[str, Any]], dict[str, Any]] = lambda request: NO_PLAN,
) -> Callable[[dict[str, Any]], Reply]:
    """A model with a 4096-token context: too long a request is refused."""

    def reply_to(request: dict[str, Any]) -> Reply:
        if too_long(request):
            return exceeded(request)
        if request["response_format"]["json_schema"]["name"] == "notes":
            return answer(notes(request))
        return answer(plan(request))

    return reply_to


def memory_of(hass: HomeAssistant) -> Memory:
    return hass.data[DATA_MEMORY]


async def run(hass: HomeAssistant, context: Context | None = None) -> dict[str, Any]:
    return await hass.services.async_call(
        DOMAIN,
        "run_nightly",
        {},
        blocking=True,
        return_response=True,
        context=context,
    )


def extraction_requests(agent: Agent) -> list[dict[str, Any]]:
    return [
        r
        for r in agent.server.chat_requests
        if r["response_format"]["json_schema"]["name"] == "notes"
    ]


async def listed_runs(hass: HomeAssistant) -> list[dict[str, Any]]:
    return await nightly_runs(hass)


async def test_a_conversation_longer_than_the_context_is_read_in_parts(
    hass: HomeAssistant, agent: Agent
) -> None:
    long_turns = [
        Said("user", f"Line {number}: " + "we talked about the garden " * 20)
        for number in range(200)
    ]
    await add_conversation(hass, "conv-long", long_turns, AT)
    await add_conversation(
        hass, "conv-after", [Said("user", "Anouk's birthday is 3 November.")], AT + 60
    )

    def notes(request: dict[str, Any]) -> dict[str, Any]:
        if "Anouk" in request["messages"][-1]["content"]:
            return {
                "notes": [{"page": "Anouk", "type": "person", "fact": "Born 3 Nov"}]
            }
        return NO_NOTES

    agent.server.reply_to = model(notes)
    result = await run(hass)
    assert result["outcome"] == "ok"
    assert result["summary"]["conversations"] == 2
    sent = extraction_requests(agent)
    assert not any(too_long(request) for request in agent.server.chat_requests)
    # The long one in its newest parts, then the next conversation.
    long_parts = [r for r in sent if "garden" in r["messages"][-1]["content"]]
    assert 1 < len(long_parts) < len(sent)
    assert "Line 199:" in long_parts[-1]["messages"][-1]["content"]
    assert (
        "Born 3 Nov"
        in (await memory_of(hass).async_read(lambda c: find_page(c, "Anouk"))).text
    )
    # Both are marked read: nothing is sent again.
    asked = len(agent.server.chat_requests)
    again = await run(hass)
    assert again["outcome"] == "ok"
    assert len(extraction_requests(agent)) == len(sent)
    assert len(agent.server.chat_requests) == asked


async def test_a_failing_conversation_never_blocks_the_others_and_is_given_up(
    hass: HomeAssistant, agent: Agent
) -> None:
    await add_conversation(
        hass, "conv-broken", [Said("user", "This one the model cannot answer.")], AT
    )

    def reply_to(request: dict[str, Any]) -> Reply:
        if "cannot answer" in request["messages"][-1]["content"]:
            return text_reply("this is not JSON")
        return model()(request)

    agent.server.reply_to = reply_to
    for night in range(3):
        await add_conversation(
            hass,
            f"conv-{night}",
            [Said("user", f"Night {night}: the plumber comes on Tuesday.")],
            AT + 60 * (night + 1),
        )
        asked = len(agent.server.chat_requests)
        result = await run(hass)
        assert result["outcome"] == "ok", result
        assert result["summary"]["failed"] == 1
        # The conversation of that night was read, the failing one tried again.
        sent = [
            r["messages"][-1]["content"] for r in agent.server.chat_requests[asked:]
        ]
        assert any(f"Night {night}:" in content for content in sent)
        assert any("cannot answer" in content for content in sent)
    assert result["summary"]["given_up"] == 1
    asked = len(agent.server.chat_requests)
    assert (await run(hass))["summary"]["conversations"] == 0
    assert len(agent.server.chat_requests) == asked


async def test_a_run_that_keeps_failing_raises_a_repairs_issue(
    hass: HomeAssistant, agent: Agent
) -> None:
    await add_page(hass, "Anouk", "Sara's sister.\n")
    issues = ir.async_get(hass)
    for _ in range(3):
        assert issues.async_get_issue(DOMAIN, "nightly_failing") is None
        # The server answers, but not with a plan.
        agent.server.script = [text_reply("no"), text_reply("no")]
        result = await run(hass)
        assert (result["outcome"], result["outcome_detail"]) == (
            "failed",
            "invalid_output",
        )
    issue = issues.async_get_issue(DOMAIN, "nightly_failing")
    assert issue is not None
    assert issue.translation_placeholders == {"runs": "3", "outcome": "invalid_output"}
    assert issue.learn_more_url == "/desktop-assistant/nightly"
    await memory_of(hass).async_remember("Anouk", "Plays the cello")
    agent.server.script = [answer(NO_PLAN)]
    assert (await run(hass))["outcome"] == "ok"
    assert issues.async_get_issue(DOMAIN, "nightly_failing") is None


async def test_a_plan_that_fails_to_apply_ends_the_run_failed(
    hass: HomeAssistant, agent: Agent
) -> None:
    await add_page(hass, "Anouk", "Sara's sister.\n")
    # Passes the checks (there is no profile yet), cannot be applied.
    plan = dict(NO_PLAN, create=[{"page": "Profile", "type": "other", "text": "x\n"}])
    agent.server.script = [answer(plan)]
    result = await run(hass)
    assert (result["outcome"], result["outcome_detail"]) == (
        "failed",
        "plan not applied (name_taken)",
    )
    assert [r["outcome"] for r in await listed_runs(hass)] == [result["outcome"]]
    assert await memory_of(hass).async_read(profile_page) is None
    # The next run works.
    agent.server.script = [answer(NO_PLAN)]
    assert (await run(hass))["outcome"] == "ok"


async def test_notes_of_a_run_that_fails_later_are_in_its_record(
    hass: HomeAssistant, agent: Agent
) -> None:
    await add_conversation(
        hass, "conv-1", [Said("user", "My sister Anouk lives in Leiden now.")], AT
    )
    agent.server.script = [
        answer({"notes": [{"page": "Anouk", "type": "person", "fact": "In Leiden"}]}),
        # The consolidation's request meets a server that answers an error.
        Reply(status=500, body=error_body(500, "boom", "server_error")),
    ]
    result = await run(hass)
    assert (result["outcome"], result["outcome_detail"]) == ("failed", "refused")
    run_detail = await memory_of(hass).async_read(
        lambda c: runs.get_run(c, result["run_id"])
    )
    (change,) = run_detail["pages"]
    assert change["action"] == "notes"
    assert "In Leiden" in change["after"]
    anouk = await memory_of(hass).async_read(lambda c: find_page(c, "Anouk"))
    reverted = await memory_of(hass).async_write(
        lambda c, now: revert_page(c, result["run_id"], anouk.id, now)
    )
    assert reverted["page_id"] == anouk.id
    anouk = await memory_of(hass).async_read(lambda c: find_page(c, "Anouk"))
    assert "In Leiden" not in anouk.text


async def test_a_cancelled_run_ends_cancelled(
    hass: HomeAssistant, agent: Agent
) -> None:
    await add_page(hass, "Anouk", "Sara's sister.\n")
    agent.server.script = [answer(NO_PLAN)]
    agent.server.script[0].delay = 30
    task = hass.async_create_task(hass.data[DATA_NIGHTLY_JOB].async_run("test"))
    await agent.server.chat_received.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [r["outcome"] for r in await listed_runs(hass)] == ["cancelled"]
    agent.server.stopping.set()


async def test_an_over_budget_profile_is_tidied_by_its_newest_lines(
    hass: HomeAssistant, agent: Agent
) -> None:
    lines = [
        f"- 2026-10-{n % 28 + 1:02}: Detail number {n} of the house" for n in range(500)
    ]
    text = "## Notes\n" + "\n".join(lines) + "\n"
    assert len(text) > 20_000
    await add_page(hass, "Profile", text, kind="profile")

    def plan(request: dict[str, Any]) -> dict[str, Any]:
        content = request["messages"][-1]["content"]
        shown = content.split(PART_NOTE + "\n", 1)[1].split("\n\nOther pages")[0]
        kept = shown.splitlines()
        return dict(
            NO_PLAN,
            rewrite=[
                {
                    "page": "Profile",
                    "text": "\n".join(kept[1:]) + "\n",
                    "dropped": [{"line": kept[0], "reason": "duplicate"}],
                }
            ],
        )

    agent.server.reply_to = model(plan=plan)
    result = await run(hass)
    assert result["outcome"] == "ok", result
    assert result["summary"]["consolidation"] == "applied"
    (request,) = agent.server.chat_requests
    assert not too_long(request)
    assert len(request["messages"][-1]["content"]) < PLAN_CHARS + 200
    profile = await memory_of(hass).async_read(profile_page)
    after = profile.text.splitlines()
    # One declared line less; the lines the model did not see are all there.
    assert len([line for line in after if line.startswith("- ")]) == 499
    assert "Detail number 0 of the house" in profile.text
    assert "Detail number 499 of the house" in profile.text


async def test_a_conversation_id_deleted_and_used_again_is_read_again(
    hass: HomeAssistant, agent: Agent
) -> None:
    said = [Said("user", "The bins go out on Thursday evening.")]
    await add_conversation(hass, "automation-id", said, AT)
    agent.server.reply_to = model()
    await run(hass)
    assert len(extraction_requests(agent)) == 1
    assert await hass.data[DATA_RECORD].async_delete("automation-id")
    await add_conversation(
        hass,
        "automation-id",
        [Said("user", "The recycling goes out on Monday.")],
        AT + 86400,
    )
    await run(hass)
    requests = extraction_requests(agent)
    assert len(requests) == 2
    assert "recycling goes out on Monday" in requests[-1]["messages"][-1]["content"]


async def test_run_nightly_is_refused_to_a_member_and_open_to_automations(
    hass: HomeAssistant, agent: Agent, hass_read_only_user: Any, hass_admin_user: Any
) -> None:
    agent.server.reply_to = model()
    with pytest.raises(Unauthorized) as caught:
        await run(hass, Context(user_id=hass_read_only_user.id))
    assert caught.value.user_id == hass_read_only_user.id
    # A user id nobody has is refused as HA's admin actions refuse it.
    with pytest.raises(UnknownUser):
        await run(hass, Context(user_id="0123456789abcdef0123456789abcdef"))
    assert await listed_runs(hass) == []
    assert (await run(hass, Context(user_id=hass_admin_user.id)))["outcome"] == "ok"
    # An automation or a script: no user.
    assert (await run(hass, Context()))["outcome"] == "ok"
