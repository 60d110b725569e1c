"""A template that cannot call tools, said right: constrained calls, or tools dropped.

Where the agents asking a server call tools constrained (*Tool calls*
Automatic or Constrained), the Repairs issue and the Servers page say so and
what it costs, with no `--jinja` advice (the template itself cannot render
tools, whatever the flag); where they are Native, that the tools are
dropped. The stand-in's `/props` says the template cannot call tools.
"""

from collections.abc import AsyncIterator
import json
from pathlib import Path
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir, llm
import pytest

from custom_components.desktop_assistant.const import CONF_TOOL_CALLS, DOMAIN
from tests.harness.failover import async_add_server
from tests.harness.hostile_server import HostileLlamaServer
from tests.harness.llama_server import serve

NO_TOOLS = {
    "total_slots": 1,
    "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False},
}
TRANSLATIONS = Path(__file__).parents[2] / "custom_components" / DOMAIN / "translations"


def issue_texts() -> dict[str, Any]:
    """The English texts of the Repairs issues."""
    return json.loads((TRANSLATIONS / "en.json").read_text(encoding="utf-8"))["issues"]


@pytest.fixture
async def llama_server(socket_enabled: None) -> AsyncIterator[HostileLlamaServer]:
    """The stand-in, its template unable to call tools."""
    async with serve(HostileLlamaServer(props_body=NO_TOOLS)) as stand_in:
        yield stand_in


def issue(hass: HomeAssistant, entry_id: str) -> ir.IssueEntry:
    found = ir.async_get(hass).async_get_issue(DOMAIN, f"no_tool_calls_{entry_id}")
    assert found is not None
    return found


async def listed(hass: HomeAssistant, hass_ws_client: Any) -> list[dict[str, Any]]:
    client = await hass_ws_client(hass)
    await client.send_json_auto_id({"type": f"{DOMAIN}/servers/list"})
    answer = await client.receive_json()
    assert answer["success"], answer
    return answer["result"]["servers"]


async def test_agents_with_tools_call_them_constrained_and_are_told_the_cost(
    hass: HomeAssistant, llama_server: HostileLlamaServer, hass_ws_client: Any
) -> None:
    with_tools = {CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}
    entry, _ = await async_add_server(
        hass, llama_server.url, "Kitchen", agent_options=with_tools
    )
    # Another entry's agent falls back to it, Automatic too.
    await async_add_server(
        hass,
        "http://127.0.0.1:9/v1",
        "Office",
        fallbacks=[entry],
        agent_options=with_tools,
    )

    found = issue(hass, entry.entry_id)
    assert found.translation_key == "constrained_tool_calls"
    assert found.translation_placeholders["agents"] == "Kitchen, Office"
    (server,) = [
        s for s in await listed(hass, hass_ws_client) if s["tool_calls"] is False
    ]
    assert server["constrained_agents"] == ["Kitchen", "Office"]

    strings = await hass.async_add_executor_job(issue_texts)
    said = strings["constrained_tool_calls"]["description"]
    assert "two requests" in said
    assert "--chat-template-file" in said
    assert "--jinja" not in said


async def test_native_agents_are_told_the_tools_are_dropped(
    hass: HomeAssistant, llama_server: HostileLlamaServer, hass_ws_client: Any
) -> None:
    entry, _ = await async_add_server(
        hass,
        llama_server.url,
        "Kitchen",
        agent_options={
            CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
            CONF_TOOL_CALLS: "native",
        },
    )

    found = issue(hass, entry.entry_id)
    assert found.translation_key == "no_tool_calls"
    (server,) = await listed(hass, hass_ws_client)
    assert server["constrained_agents"] == []
    strings = await hass.async_add_executor_job(issue_texts)
    assert "--jinja" not in strings["no_tool_calls"]["description"]
    assert "Automatic" in strings["no_tool_calls"]["description"]
