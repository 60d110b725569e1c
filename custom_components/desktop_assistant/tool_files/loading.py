"""Load the config folder's tools into Home Assistant, and reload them.

A problem in a file becomes a Repairs issue naming the file and keys; it is
cleared on the first load that finds the file fixed (or gone). A missing
tools folder is a fixable issue: its fix installs the example tools.
"""

import logging
from pathlib import Path
import re

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir

from ..const import CONFIG_FOLDER, DOMAIN, PANEL_URL_PATH
from ..runtime import DATA_TOOLS
from ..tools import Problem, ToolFolder, load_folder
from .examples import InstallReport, install_examples
from .intents import async_update_intents

_LOGGER = logging.getLogger(__name__)

ISSUE_PREFIX = "invalid_file_"
ISSUE_NO_TOOLS_FOLDER = "no_tools_folder"


async def async_load_tools(hass: HomeAssistant) -> None:
    """Read the folder again; new tools, intents and issues replace the old."""
    registry = hass.data[DATA_TOOLS]
    folder, has_tools_folder = await hass.async_add_executor_job(
        _load, registry.folder.root
    )
    previous = [spec.name for spec in registry.tools]
    registry.replace(folder)
    async_update_intents(hass, registry, previous)
    _update_issues(hass, folder.problems)
    _update_tools_folder_issue(hass, has_tools_folder)
    for problem in folder.problems:
        _LOGGER.warning("Tool config problem: %s", problem)
    _LOGGER.debug("Loaded tools: %s", ", ".join(folder.tools) or "none")


async def async_install_examples(hass: HomeAssistant) -> InstallReport:
    """Copy the example tools into the config folder, then reload the tools.

    Raises OSError when the folder cannot be written.
    """
    registry = hass.data[DATA_TOOLS]
    report = await hass.async_add_executor_job(install_examples, registry.folder.root)
    _LOGGER.info(
        "Installed example tool files: %s; kept existing: %s",
        ", ".join(report.installed) or "none",
        ", ".join(report.skipped) or "none",
    )
    await async_load_tools(hass)
    return report


def _load(root: Path) -> tuple[ToolFolder, bool]:
    return load_folder(root), (root / "tools").is_dir()


def _update_tools_folder_issue(hass: HomeAssistant, has_tools_folder: bool) -> None:
    if has_tools_folder:
        ir.async_delete_issue(hass, DOMAIN, ISSUE_NO_TOOLS_FOLDER)
        return
    ir.async_create_issue(
        hass,
        DOMAIN,
        ISSUE_NO_TOOLS_FOLDER,
        is_fixable=True,
        severity=ir.IssueSeverity.WARNING,
        translation_key=ISSUE_NO_TOOLS_FOLDER,
        translation_placeholders={"folder": f"{CONFIG_FOLDER}/tools"},
    )


def _update_issues(hass: HomeAssistant, problems: tuple[Problem, ...]) -> None:
    by_file: dict[str, list[Problem]] = {}
    for problem in problems:
        by_file.setdefault(problem.file, []).append(problem)
    wanted = {_issue_id(file): file for file in by_file}
    issues = ir.async_get(hass).issues
    for domain, issue_id in list(issues):
        if (
            domain == DOMAIN
            and issue_id.startswith(ISSUE_PREFIX)
            and issue_id not in wanted
        ):
            ir.async_delete_issue(hass, DOMAIN, issue_id)
    for issue_id, file in wanted.items():
        tool_file = file.startswith("tools/") and file.endswith(".toml")
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id,
            is_fixable=False,
            severity=ir.IssueSeverity.ERROR,
            translation_key="invalid_tool_file" if tool_file else "invalid_config_file",
            # The panel's Tools page lists the file with its problems.
            learn_more_url=f"/{PANEL_URL_PATH}/tools",
            translation_placeholders={
                "file": file,
                "problems": "; ".join(_describe(problem) for problem in by_file[file]),
            },
        )


def _issue_id(file: str) -> str:
    return ISSUE_PREFIX + re.sub(r"[^a-z0-9_]", "_", file.lower())


def _describe(problem: Problem) -> str:
    if problem.key is None:
        return problem.message
    return f"{problem.key}: {problem.message}"
