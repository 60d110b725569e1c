"""The panel's Tools, Jobs and Servers commands through HA's websocket API.

Fast checks of the contract the pages read, with hostile input; the pages
themselves are tried in a browser in test_pages.py.
"""

import asyncio
from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.server.reported import server_props
from custom_components.desktop_assistant.tool_files.runs import (
    KEEP_RUNS,
    MAX_ARGUMENTS,
    MAX_FIRST_LINE,
)
from tests.harness.agent import API_KEY, TEST_API, Agent
from tests.harness.agent_entry import merged_tool_name
from tests.harness.llama_server import MODEL_ID, text_reply, tool_call_reply

pytestmark = pytest.mark.llm_apis("assist", TEST_API)

SECRET = "hunter2-secret-value"
ECHO = """
description = "Say the text back."
command = ["echo", "{text}"]
[params.text]
type = "string"
description = "What to say."
"""
NOTE = """
description = "Add a note to the shopping list."
command = ["echo", "added {item}"]
changes = true
[params.item]
type = "string"
description = "The item."
[confirm]
en = "Add {item} to the list?"
"""
BROKEN = """
description = "Forgot its command."
"""


@pytest.fixture
def tool_files() -> dict[str, str]:
    return {"echo": ECHO, "note": NOTE, "broken": BROKEN}


@pytest.fixture
async def client(hass: HomeAssistant, agent: Agent, hass_ws_client: Any) -> Any:
    config = Path(hass.config.path(DOMAIN, "config.toml"))
    await hass.async_add_executor_job(
        config.write_text, f'[env]\nSHOP_TOKEN = "{SECRET}"\n'
    )
    await hass.services.async_call(DOMAIN, "reload", blocking=True)
    return await hass_ws_client(hass)


async def command(client: Any, **message: Any) -> dict[str, Any]:
    await client.send_json_auto_id(message)
    return await client.receive_json()


async def result(client: Any, **message: Any) -> Any:
    answer = await command(client, **message)
    assert answer["success"], answer
    return answer["result"]


async def test_tools_list_by_source_with_the_broken_file(client: Any) -> None:
    listed = await result(client, type=f"{DOMAIN}/tools/list")

    assert [tool["name"] for tool in listed["files"]] == ["echo", "note"]
    note = listed["files"][1]
    assert note["changes"] is True
    assert note["parameters"] == [
        {"name": "item", "type": "string", "description": "The item."}
    ]
    (broken,) = listed["broken"]
    assert broken["file"] == "tools/broken.toml"
    assert any("command" in problem for problem in broken["problems"])
    assert {tool["name"] for tool in listed["memory"]} >= {
        "desktop_assistant__remember",
        "desktop_assistant__recall_conversations",
    }
    by_name = {group["name"]: group for group in listed["apis"]}
    assert by_name["Test tools"]["source"] == "api"
    assert {tool["name"] for tool in by_name["Test tools"]["tools"]} == {
        "weather",
        "GetDateTime",
    }
    assist = [group for group in listed["apis"] if group["source"] == "assist"]
    assert assist
    # The integration's own tools are listed once, in their own groups.
    assert not any(
        tool["name"].startswith(f"{DOMAIN}__") for tool in assist[0]["tools"]
    )


async def test_try_a_tool_and_its_history_hides_secrets(client: Any) -> None:
    answer = await result(
        client,
        type=f"{DOMAIN}/tools/run",
        tool="echo",
        arguments={"text": f"token {SECRET}"},
    )
    assert answer == {"result": "token ***"}
    runs = (await result(client, type=f"{DOMAIN}/tools/runs", tool="echo"))["runs"]
    (run,) = runs
    assert run["outcome"] == "ok"
    assert SECRET not in run["arguments"]
    assert "***" in run["arguments"]
    assert run["first_line"] == "token ***"


async def test_a_changing_tool_needs_the_second_click(client: Any) -> None:
    first = await result(
        client, type=f"{DOMAIN}/tools/run", tool="note", arguments={"item": "milk"}
    )
    assert first == {"confirm": "Add milk to the list?"}
    assert (await result(client, type=f"{DOMAIN}/tools/runs", tool="note"))[
        "runs"
    ] == []
    second = await result(
        client,
        type=f"{DOMAIN}/tools/run",
        tool="note",
        arguments={"item": "milk"},
        confirmed=True,
    )
    assert second == {"result": "added milk"}


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"tool": "nope"}, "not_found"),
        ({"tool": "broken"}, "not_found"),
        ({"tool": "echo", "arguments": {"other": "x"}}, "invalid_arguments"),
        ({"tool": "echo", "arguments": {"text": {"nested": 1}}}, "invalid_format"),
        ({"tool": "echo", "arguments": "text"}, "invalid_format"),
        ({"tool": ["echo"]}, "invalid_format"),
    ],
)
async def test_hostile_try_it_is_refused_and_the_next_works(
    client: Any, message: dict[str, Any], code: str
) -> None:
    answer = await command(client, type=f"{DOMAIN}/tools/run", **message)
    assert not answer["success"]
    assert answer["error"]["code"] == code
    after = await result(
        client, type=f"{DOMAIN}/tools/run", tool="echo", arguments={"text": "ok"}
    )
    assert after == {"result": "ok"}


async def test_the_history_keeps_the_newest_runs(client: Any) -> None:
    for number in range(KEEP_RUNS + 3):
        await result(
            client,
            type=f"{DOMAIN}/tools/run",
            tool="echo",
            arguments={"text": f"run {number}"},
        )
    runs = (await result(client, type=f"{DOMAIN}/tools/runs", tool="echo"))["runs"]
    assert len(runs) == KEEP_RUNS
    assert runs[0]["first_line"] == f"run {KEEP_RUNS + 2}"
    assert runs[-1]["first_line"] == "run 3"


async def test_jobs_list_and_run_retention_now(client: Any) -> None:
    jobs = {
        job["job"]: job
        for job in (await result(client, type=f"{DOMAIN}/jobs/list"))["jobs"]
    }
    assert set(jobs) == {"nightly", "retention"}
    assert jobs["nightly"]["schedule"] == "03:00"
    assert jobs["retention"]["schedule"] == "04:00"
    assert jobs["retention"]["next_run"]
    assert jobs["retention"]["runs"] == []

    done = await result(client, type=f"{DOMAIN}/jobs/run_now", job="retention")
    jobs = {
        job["job"]: job
        for job in (await result(client, type=f"{DOMAIN}/jobs/list"))["jobs"]
    }
    (run,) = jobs["retention"]["runs"]
    assert done == {
        "run_id": run["id"],
        "outcome": "ok",
        "outcome_detail": None,
        "summary": {"deleted": 0},
    }
    assert run["trigger"] == "person"
    assert run["outcome"] == "ok"
    assert run["summary"] == {"deleted": 0}
    assert jobs["retention"]["running"] is False

    answer = await command(client, type=f"{DOMAIN}/jobs/run_now", job="backup")
    assert answer["error"]["code"] == "not_found"


async def test_servers_list_names_the_agents(client: Any, agent: Agent) -> None:
    (server,) = (await result(client, type=f"{DOMAIN}/servers/list"))["servers"]
    assert server["entry_id"] == agent.entry.entry_id
    assert server["reachable"] is True
    assert server["agents"] == [
        {"name": MODEL_ID, "entity_id": agent.entity_id, "role": "first"}
    ]
    assert server["can_wake"] is False
    answer = await command(
        client, type=f"{DOMAIN}/servers/wake", entry_id=agent.entry.entry_id
    )
    assert answer["error"]["code"] == "unavailable"
    answer = await command(client, type=f"{DOMAIN}/servers/wake", entry_id="nope")
    assert answer["error"]["code"] == "not_found"


@pytest.mark.parametrize("settings", [["n_ctx", 4096], "4096", 4096, None])
async def test_servers_list_reads_odd_props(
    client: Any, agent: Agent, settings: Any
) -> None:
    health = agent.entry.runtime_data.health
    health.props = server_props(
        {"total_slots": 1, "default_generation_settings": settings}
    )
    (server,) = (await result(client, type=f"{DOMAIN}/servers/list"))["servers"]
    assert server["context"] is None
    assert server["slots"] == 1


async def test_describe_gives_page_kinds_and_error_codes(client: Any) -> None:
    described = await result(client, type=f"{DOMAIN}/panel/describe")
    assert "person" in described["page_kinds"]
    assert {"not_found", "changed", "invalid_arguments"} <= set(
        described["error_codes"]
    )


@pytest.mark.parametrize(
    "message",
    [
        {"type": f"{DOMAIN}/tools/list"},
        {"type": f"{DOMAIN}/tools/run", "tool": "echo", "arguments": {"text": "x"}},
        {"type": f"{DOMAIN}/tools/reload"},
        {"type": f"{DOMAIN}/tools/install_examples"},
        {"type": f"{DOMAIN}/jobs/run_now", "job": "retention"},
        {"type": f"{DOMAIN}/servers/list"},
        {"type": f"{DOMAIN}/panel/describe"},
    ],
)
async def test_members_are_refused(
    hass: HomeAssistant,
    client: Any,
    hass_ws_client: Any,
    hass_read_only_access_token: str,
    message: dict[str, Any],
) -> None:
    member = await hass_ws_client(hass, hass_read_only_access_token)
    answer = await command(member, **message)
    assert answer["error"]["code"] == "unauthorized"
    jobs = (await result(client, type=f"{DOMAIN}/jobs/list"))["jobs"]
    assert all(job["runs"] == [] for job in jobs if job["job"] == "retention")


async def test_a_broken_file_links_to_the_tools_page(
    hass: HomeAssistant, client: Any
) -> None:
    issues = ir.async_get(hass).issues
    (issue,) = [
        issue
        for (domain, _), issue in issues.items()
        if domain == DOMAIN and issue.translation_key == "invalid_tool_file"
    ]
    assert issue.learn_more_url == "/desktop-assistant/tools"


async def test_the_profile_can_be_started(client: Any) -> None:
    created = await result(client, type=f"{DOMAIN}/memory/profile/create")
    again = await result(client, type=f"{DOMAIN}/memory/profile/create")
    assert created == again
    page = await result(
        client, type=f"{DOMAIN}/memory/pages/get", page_id=created["page_id"]
    )
    assert page["type"] == "profile"


async def test_a_huge_argument_is_kept_short_in_the_history(client: Any) -> None:
    text = "x" * 100_000
    answer = await result(
        client, type=f"{DOMAIN}/tools/run", tool="echo", arguments={"text": text}
    )
    assert answer["result"].startswith("x")
    (run,) = (await result(client, type=f"{DOMAIN}/tools/runs", tool="echo"))["runs"]
    assert len(run["arguments"]) <= MAX_ARGUMENTS
    assert len(run["first_line"]) <= MAX_FIRST_LINE


async def test_servers_list_reads_the_health_of_the_failover_runtime(
    client: Any, agent: Agent
) -> None:
    """Needs the failover branch: `entry.runtime_data` a `ServerRuntime` with `health`."""
    if getattr(agent.entry.runtime_data, "health", None) is None:
        pytest.skip("the entry's runtime has no health yet (the failover branch)")
    agent.server.script = [text_reply("It is sunny.")]
    await agent.ask("How is the weather?")
    (server,) = (await result(client, type=f"{DOMAIN}/servers/list"))["servers"]
    assert server["reachable"] is True
    assert server["since"]
    assert server["slots"] == agent.server.total_slots
    assert server["timings"]["prompt_n"] is not None
    assert API_KEY not in str(server)


async def test_an_agents_tool_call_is_in_the_history(client: Any, agent: Agent) -> None:
    # The name Home Assistant gives it among Assist's tools and the test API's.
    echo = await merged_tool_name(agent.hass, ["assist", TEST_API], "__echo")
    agent.server.script = [
        tool_call_reply((echo, '{"text": "from the agent"}')),
        text_reply("Done."),
    ]
    await agent.ask("Say from the agent")
    runs = (await result(client, type=f"{DOMAIN}/tools/runs", tool="echo"))["runs"]
    for _ in range(200):
        if runs:
            break
        await asyncio.sleep(0.05)
        runs = (await result(client, type=f"{DOMAIN}/tools/runs", tool="echo"))["runs"]
    (run,) = runs
    assert run["first_line"] == "from the agent"
    assert run["outcome"] == "ok"
