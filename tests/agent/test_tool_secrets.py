"""Secrets stay out of what tools return, and credentials out of titles and logs.

Through the ways in: a conversation whose model calls a tool file, the
run_tool action, the config flow, diagnostics.
"""

import json
import logging
from pathlib import Path

from homeassistant import config_entries
from homeassistant.components import conversation
from homeassistant.components.conversation.trace import async_get_traces
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_MODEL, CONF_URL
from homeassistant.core import Context, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator

from custom_components.desktop_assistant.chat_session import async_get_chat_session
from custom_components.desktop_assistant.const import DEFAULT_AGENT_OPTIONS, DOMAIN
from tests.harness.agent import API_KEY
from tests.harness.llama_server import (
    MODEL_ID,
    LlamaServerStandIn,
    text_reply,
    tool_call_reply,
)
from tests.harness.ports import closed_port_url
from tests.harness.tool_files import write_script

from ..tools.test_processes import LEAVER_TOOL, LEAVES_A_CHILD
from ..tools.test_runner import child_gone

TOKEN = "tok/93bd+1f7e"
LEAK_TOOL = """\
description = "Prints what it should not"
command = ["leak.sh"]
"""
LEAK_SH = f"""
    #!/bin/sh
    echo "token=$SEARCH_TOKEN encoded=tok%2F93bd%2B1f7e key={API_KEY}"
    echo "rejected {API_KEY} and $SEARCH_TOKEN" >&2
    [ "$1" = fail ] && exit 2
    exit 0
"""
FAIL_TOOL = """\
description = "Fails, saying what it should not"
command = ["leak.sh", "fail"]
"""
PASSWORD = "s3cr3t-7731"


def write_tools(hass: HomeAssistant, child_pid: Path) -> None:
    folder = Path(hass.config.path(DOMAIN))
    (folder / "tools").mkdir(parents=True)
    (folder / "tools" / "leak.toml").write_text(LEAK_TOOL)
    (folder / "tools" / "fail.toml").write_text(FAIL_TOOL)
    (folder / "tools" / "leaver.toml").write_text(LEAVER_TOOL)
    write_script(folder / "tools" / "leak.sh", LEAK_SH)
    write_script(folder / "tools" / "leaver.py", LEAVES_A_CHILD)
    (folder / "config.toml").write_text(
        f'[env]\nSEARCH_TOKEN = "{TOKEN}"\nCHILD_PID = "{child_pid}"\n'
    )


@pytest.fixture
async def entry(
    hass: HomeAssistant,
    llama_server: LlamaServerStandIn,
    tmp_path: Path,
) -> MockConfigEntry:
    """An agent with an API key whose tools are the config folder's."""
    await hass.async_add_executor_job(write_tools, hass, tmp_path / "child.pid")
    llama_server.api_key = API_KEY
    entry = MockConfigEntry(
        domain=DOMAIN,
        title=llama_server.url,
        data={CONF_URL: llama_server.url, CONF_API_KEY: API_KEY},
        subentries_data=[
            {
                "subentry_type": "conversation",
                "title": MODEL_ID,
                "data": DEFAULT_AGENT_OPTIONS
                | {CONF_MODEL: MODEL_ID, CONF_LLM_HASS_API: [DOMAIN]},
                "unique_id": None,
            }
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    return entry


async def run_tool(hass: HomeAssistant, tool: str) -> dict:
    return await hass.services.async_call(
        DOMAIN, "run_tool", {"tool": tool}, blocking=True, return_response=True
    )


async def test_model_chat_log_and_traces_never_see_a_secret(
    hass: HomeAssistant, entry: MockConfigEntry, llama_server: LlamaServerStandIn
) -> None:
    (subentry_id,) = entry.subentries
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", DOMAIN, subentry_id
    )
    llama_server.script = [
        tool_call_reply(("desktop_assistant__leak", "{}")),
        text_reply("Done."),
    ]
    result = await conversation.async_converse(
        hass, "Leak it", None, Context(), "en", entity_id
    )
    assert result.response.speech["plain"]["speech"] == "Done."
    expected = "token=*** encoded=*** key=***"
    # What the model was sent as the tool's result.
    assert llama_server.chat_requests[1]["messages"][-1]["content"] == expected
    with (
        async_get_chat_session(hass, result.conversation_id, None) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        results = [
            item.result.data
            for item in chat_log.content
            if isinstance(item, conversation.ToolResultContent)
        ]
    assert results == [{"result": expected}]
    traces = json.dumps([trace.as_dict() for trace in async_get_traces()], default=str)
    assert "token=***" in traces
    assert TOKEN not in traces
    assert API_KEY not in traces


async def test_run_tool_response_never_holds_a_secret(
    hass: HomeAssistant, entry: MockConfigEntry
) -> None:
    assert await run_tool(hass, "leak") == {"result": "token=*** encoded=*** key=***"}
    # stderr's last line, in the error, too.
    assert await run_tool(hass, "fail") == {
        "result": "error: leak.sh exited with status 2: rejected *** and ***"
    }
    # Once the entry is gone its key is no secret of this Home Assistant.
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert await run_tool(hass, "leak") == {
        "result": f"token=*** encoded=*** key={API_KEY}"
    }


async def test_run_tool_answers_promptly_when_a_child_holds_the_pipes(
    hass: HomeAssistant, entry: MockConfigEntry, tmp_path: Path
) -> None:
    for how in ("plain", "setsid", "daemon"):
        started = hass.loop.time()
        assert await hass.services.async_call(
            DOMAIN,
            "run_tool",
            {"tool": "leaver", "arguments": {"how": how}},
            blocking=True,
            return_response=True,
        ) == {"result": "the answer"}
        assert hass.loop.time() - started < 2
        assert await child_gone(tmp_path / "child.pid")
        (tmp_path / "child.pid").unlink()


async def test_url_credentials_stay_out_of_titles_logs_and_diagnostics(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    llama_server: LlamaServerStandIn,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="custom_components.desktop_assistant")
    with_credentials = llama_server.url.replace("://", f"://admin:{PASSWORD}@")
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    # A server that is down: the failure is logged.
    down = closed_port_url("/v1").replace("://", f"://admin:{PASSWORD}@")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: down}
    )
    assert result["errors"] == {"base": "cannot_connect"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: with_credentials}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    entry = result["result"]
    assert entry.title == llama_server.url
    # The credentials are still used to reach the server.
    assert entry.data[CONF_URL] == with_credentials
    assert entry.state is ConfigEntryState.LOADED

    assert await async_setup_component(hass, "diagnostics", {})
    diagnostics = await get_diagnostics_for_config_entry(hass, hass_client, entry)
    assert diagnostics["entry"]["title"] == llama_server.url
    assert diagnostics["entry"]["data"] == {"url": llama_server.url}
    assert PASSWORD not in json.dumps(diagnostics)
    assert "Checking failed" in caplog.text
    assert PASSWORD not in caplog.text


async def test_title_of_an_older_entry_loses_its_credentials(
    hass: HomeAssistant, llama_server: LlamaServerStandIn
) -> None:
    with_credentials = llama_server.url.replace("://", f"://admin:{PASSWORD}@")
    entry = MockConfigEntry(
        domain=DOMAIN, title=with_credentials, data={CONF_URL: with_credentials}
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    assert entry.title == llama_server.url
