"""Websocket commands (admin only) of the panel's Tools page.

What every agent of the integration can call, grouped by where it comes
from; a tool file's last runs; *Try it* through the same registry the agents
use (a changing tool runs only with `confirmed`); reload and install the
example tools. Errors: `not_found` (no such tool file), `invalid_arguments`,
`cannot_install`, `unavailable` (the database failed).
"""

from typing import Any, Final

from homeassistant.components import websocket_api
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import llm
import probatio as vol

from ..agent.messages import format_tools
from ..const import DOMAIN
from ..llm import ConfigFolderTool, ToolFilesAPI
from ..runtime import DATA_STORE, DATA_TOOLS
from ..tools import ArgumentError, Problem, ToolSpec, parse_arguments
from ..websocket_commands import Refused, admin_command
from .loading import async_install_examples, async_load_tools
from .runs import list_runs

PREFIX: Final = f"{DOMAIN}/tools"
ERR_INVALID_ARGUMENTS: Final = "invalid_arguments"
ERR_CANNOT_INSTALL: Final = "cannot_install"
ERROR_CODES: Final = (ERR_INVALID_ARGUMENTS, ERR_CANNOT_INSTALL)


def tool_file(spec: ToolSpec) -> dict[str, Any]:
    """A tool file as the page shows it."""
    return {
        "name": spec.name,
        "description": spec.description,
        "parameters": [
            {"name": param.name, "type": param.type, "description": param.description}
            for param in spec.params.values()
        ],
        "announce": {tag: list(phrases) for tag, phrases in spec.announce.items()},
        "changes": spec.changes,
        "destructive": spec.destructive,
        "timeout": spec.timeout,
    }


def broken_files(problems: tuple[Problem, ...]) -> list[dict[str, Any]]:
    """Each file that failed to load, with its problems."""
    by_file: dict[str, list[str]] = {}
    for problem in problems:
        by_file.setdefault(problem.file, []).append(
            problem.message
            if problem.key is None
            else f"{problem.key}: {problem.message}"
        )
    return [
        {"file": file, "problems": found} for file, found in sorted(by_file.items())
    ]


def described(spec: dict[str, Any], tool: llm.Tool) -> dict[str, Any]:
    """An LLM tool as its function spec says, and whether it changes things."""
    function = spec["function"]
    return {
        "name": function["name"],
        "description": function["description"],
        "parameters": [
            {
                "name": name,
                "type": schema.get("type", ""),
                "description": schema.get("description", ""),
            }
            for name, schema in function["parameters"].get("properties", {}).items()
        ],
        "changes": not tool.annotations.read_only,
    }


def agents_apis(hass: HomeAssistant) -> list[str]:
    """The LLM APIs any agent of the integration is given, other than its own."""
    found: set[str] = set()
    for entry in hass.config_entries.async_entries(DOMAIN):
        for subentry in entry.subentries.values():
            apis = subentry.data.get(CONF_LLM_HASS_API) or []
            found.update([apis] if isinstance(apis, str) else apis)
    found.discard(DOMAIN)
    return sorted(found)


def panel_context(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> llm.LLMContext:
    """The context an agent's question would give, for the person on the panel."""
    return llm.LLMContext(
        platform=DOMAIN,
        context=connection.context(msg),
        language=hass.config.language,
        assistant="conversation",
        device_id=None,
    )


def described_tools(
    instance: llm.APIInstance, leave_out: set[str]
) -> list[dict[str, Any]]:
    """The instance's tools as the model is told them, but those left out."""
    tools = {tool.name: tool for tool in instance.tools}
    return [
        described(spec, tools[spec["function"]["name"]])
        for spec in format_tools(instance)
        if spec["function"]["name"] not in leave_out
    ]


async def api_groups(
    hass: HomeAssistant, context: llm.LLMContext, own: set[str]
) -> list[dict[str, Any]]:
    """The tools of Assist and of each other API (MCP servers), less the integration's."""
    available = {api.id for api in llm.async_get_apis(hass)}
    groups = []
    for api_id in agents_apis(hass):
        if api_id in available:
            instance = await llm.async_get_api(hass, api_id, context)
            groups.append(
                {
                    "source": "assist" if api_id == llm.LLM_API_ASSIST else "api",
                    "name": instance.api.name,
                    "tools": described_tools(instance, own),
                }
            )
    return groups


@admin_command({vol.Required("type"): f"{PREFIX}/list"})
async def websocket_list_tools(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Every tool an agent can call, by source; the files that failed to load."""
    registry = hass.data[DATA_TOOLS]
    context = panel_context(hass, connection, msg)
    ours = await ToolFilesAPI(hass).async_get_api_instance(context)
    files = {tool.name for tool in ours.tools if isinstance(tool, ConfigFolderTool)}
    own = {tool.name for tool in ours.tools}
    return {
        "files": [tool_file(spec) for spec in registry.tools],
        "broken": broken_files(registry.problems),
        "memory": described_tools(ours, files),
        "apis": await api_groups(hass, context, own),
    }


@admin_command({vol.Required("type"): f"{PREFIX}/runs", vol.Required("tool"): str})
async def websocket_tool_runs(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """A tool file's last runs, newest first (a file gone keeps its runs)."""
    runs = await hass.data[DATA_STORE].async_run(lambda db: list_runs(db, msg["tool"]))
    return {"runs": runs}


@admin_command(
    {
        vol.Required("type"): f"{PREFIX}/run",
        vol.Required("tool"): str,
        vol.Optional("arguments", default={}): {str: vol.Any(str, int, float, bool)},
        vol.Optional("confirmed", default=False): bool,
    }
)
async def websocket_run_tool(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Try a tool file; one that changes things first answers its question.

    The answer is `{"result": text}` once run, or `{"confirm": question}`
    (the tool's own question, or null) until the person confirms.
    """
    registry = hass.data[DATA_TOOLS]
    if (spec := registry.get(msg["tool"])) is None:
        raise Refused(websocket_api.ERR_NOT_FOUND, f"There is no tool {msg['tool']}")
    try:
        values = parse_arguments(spec, msg["arguments"])
    except ArgumentError as err:
        raise Refused(ERR_INVALID_ARGUMENTS, str(err)) from err
    if spec.changes and not msg["confirmed"]:
        return {"confirm": spec.question(hass.config.language, values)}
    return {"result": await registry.async_run(spec.name, msg["arguments"])}


@admin_command({vol.Required("type"): f"{PREFIX}/reload"})
async def websocket_reload_tools(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Read the config folder again, as the reload action does."""
    await async_load_tools(hass)
    return {"problems": len(hass.data[DATA_TOOLS].problems)}


@admin_command({vol.Required("type"): f"{PREFIX}/install_examples"})
async def websocket_install_examples(
    hass: HomeAssistant, connection: websocket_api.ActiveConnection, msg: dict[str, Any]
) -> dict[str, Any]:
    """Copy the example tools in (never over a file that is there), then reload."""
    try:
        report = await async_install_examples(hass)
    except OSError as err:
        raise Refused(ERR_CANNOT_INSTALL, str(err)) from err
    return {"installed": list(report.installed), "skipped": list(report.skipped)}


@callback
def async_register_commands(hass: HomeAssistant) -> None:
    """Register the Tools page's commands."""
    for handler in (
        websocket_list_tools,
        websocket_tool_runs,
        websocket_run_tool,
        websocket_reload_tools,
        websocket_install_examples,
    ):
        websocket_api.async_register_command(hass, handler)
