"""What the real llama-server says its chat template can do, and the warnings.

SmolLM2-135M-Instruct's own template cannot call tools: llama-server's
`/props` says so (`chat_template_caps`), and it would drop the tools of
every question. The config flow, a Repairs issue and the panel's Servers
page say so; the issue goes when the server is given a template that can
(`--chat-template-file`), or with the entry. The tiny generated model's
template (Qwen2.5's ChatML with tools) can, and gets no warning.
"""

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from homeassistant import config_entries
from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)

from custom_components.desktop_assistant.const import (
    CONF_TOOL_CALLS,
    DOMAIN,
    HEALTH_INTERVAL,
)
from tests.harness.ports import free_port
from tests.harness.real_engines import (
    MISSING_SMOLLM2,
    SMOLLM2_MODEL,
    RealLlamaServer,
    cached_model,
    start_llama_server,
)
from tests.harness.tiny_llama import CHAT_TEMPLATE

SMOLLM2_NAME = Path(SMOLLM2_MODEL).stem


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLlamaServer]:
    """llama-server on the tiny model, whose template can call tools."""
    with start_llama_server(
        tmp_path_factory.mktemp("tiny"), "--ctx-size", "2048"
    ) as server:
        yield server


def issue_of(hass: HomeAssistant, entry: config_entries.ConfigEntry) -> Any:
    """The entry's `no_tool_calls` issue, or None."""
    return ir.async_get(hass).async_get_issue(DOMAIN, f"no_tool_calls_{entry.entry_id}")


async def listed_server(hass_ws_client: Any, hass: HomeAssistant) -> dict[str, Any]:
    """The one server the panel's Servers page lists."""
    client = await hass_ws_client(hass)
    await client.send_json_auto_id({"type": f"{DOMAIN}/servers/list"})
    answer = await client.receive_json()
    assert answer["success"], answer
    (server,) = answer["result"]["servers"]
    return server


async def test_a_template_without_tools_warns_in_the_flow_repairs_and_panel(
    hass: HomeAssistant,
    socket_enabled: None,
    smollm2_server: RealLlamaServer,
    hass_ws_client: Any,
) -> None:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: smollm2_server.url}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "tool_calls"
    assert result["description_placeholders"]["model"] == SMOLLM2_NAME
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_TOOL_CALLS: "constrained"}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    entry: config_entries.ConfigEntry = result["result"]
    (subentry,) = entry.subentries.values()
    assert subentry.data[CONF_TOOL_CALLS] == "constrained"

    assert entry.runtime_data.health.props.tool_calls is False
    # Its agent calls tools constrained: the issue says so, and what it costs.
    issue = issue_of(hass, entry)
    assert issue is not None
    assert issue.translation_key == "constrained_tool_calls"
    assert issue.severity is ir.IssueSeverity.WARNING
    assert issue.translation_placeholders == {
        "server": entry.title,
        "model": SMOLLM2_NAME,
        "agents": subentry.title,
    }
    server = await listed_server(hass_ws_client, hass)
    assert server["tool_calls"] is False
    # SmolLM2 runs without a projector (--mmproj): it sees no images.
    assert server["vision"] is False
    assert server["constrained_agents"] == [subentry.title]

    # Set to Native, the agent's tools are dropped: the issue says that.
    hass.config_entries.async_update_subentry(
        entry, subentry, data=subentry.data | {CONF_TOOL_CALLS: "native"}
    )
    await hass.async_block_till_done()
    issue = issue_of(hass, entry)
    assert issue.translation_key == "no_tool_calls"
    assert issue.translation_placeholders["agents"] == ""
    server = await listed_server(hass_ws_client, hass)
    assert server["constrained_agents"] == []

    assert await hass.config_entries.async_remove(entry.entry_id)
    await hass.async_block_till_done()
    assert issue_of(hass, entry) is None


async def test_a_template_that_calls_tools_gets_no_warning(
    hass: HomeAssistant,
    socket_enabled: None,
    tiny_server: RealLlamaServer,
    hass_ws_client: Any,
) -> None:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: tiny_server.url}
    )
    await hass.async_block_till_done()
    assert result["type"] is FlowResultType.CREATE_ENTRY
    entry: config_entries.ConfigEntry = result["result"]
    assert entry.runtime_data.health.props.tool_calls is True
    assert issue_of(hass, entry) is None
    server = await listed_server(hass_ws_client, hass)
    assert server["tool_calls"] is True
    await hass.config_entries.async_unload(entry.entry_id)


async def test_a_template_file_that_calls_tools_clears_the_issue_at_the_next_check(
    hass: HomeAssistant,
    socket_enabled: None,
    tmp_path: Path,
    hass_ws_client: Any,
) -> None:
    model = cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
    template = tmp_path / "chatml-tools.jinja"
    template.write_text(CHAT_TEMPLATE)
    port = free_port()
    args = ("--ctx-size", "2048")
    (tmp_path / "own").mkdir()
    (tmp_path / "fixed").mkdir()
    with start_llama_server(tmp_path / "own", *args, port=port, model=model) as own:
        entry = MockConfigEntry(domain=DOMAIN, title=own.url, data={CONF_URL: own.url})
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        assert issue_of(hass, entry) is not None
        assert (await listed_server(hass_ws_client, hass))["tool_calls"] is False

    # The fix the issue names, on the same address, between two checks.
    fixed_args = (*args, "--chat-template-file", str(template))
    with start_llama_server(tmp_path / "fixed", *fixed_args, port=port, model=model):
        async_fire_time_changed(
            hass, dt_util.utcnow() + timedelta(seconds=HEALTH_INTERVAL + 1)
        )
        await hass.async_block_till_done(wait_background_tasks=True)
        assert issue_of(hass, entry) is None
        assert (await listed_server(hass_ws_client, hass))["tool_calls"] is True
        await hass.config_entries.async_unload(entry.entry_id)
