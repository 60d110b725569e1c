"""Installing the example tools from Home Assistant: action, Configure, Repairs."""

import errno
import os
from pathlib import Path
import subprocess
import sys
import tomllib

from homeassistant.const import CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.service import async_get_all_descriptions
from homeassistant.helpers.translation import async_get_translations
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.desktop_assistant.store import DB_FILE
from tests.harness.tool_files import write_tool

from .conftest import DOMAIN, Setup

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = [
    "config.toml",
    "tools/README.md",
    "tools/calendar.py",
    "tools/calendar.toml",
    "tools/calendar_add.py",
    "tools/calendar_add.toml",
    "tools/helperlib.py",
    "tools/now.toml",
    "tools/search.py",
    "tools/search.toml",
    "tools/travel.py",
    "tools/travel.toml",
    "tools/weather.py",
    "tools/weather.toml",
]
HELPERS = [
    "tools/calendar.py",
    "tools/calendar_add.py",
    "tools/search.py",
    "tools/travel.py",
    "tools/weather.py",
]
USER_WEATHER = 'description = "My own weather"\ncommand = ["echo", "sunny"]\n'
USER_CONFIG = '[env]\nSEARXNG_URL = "http://searx.lan"\n'
REPOSITORY = Path(__file__).resolve().parents[2]
# Installs into a folder with every file limited to 1000 bytes, as on a disk
# that fills up during the install: config.toml (1.7 kB, the first file) is
# cut. SIGXFSZ ignored, a write past the limit fails with EFBIG.
CUT_INSTALL = """
import resource, signal, sys
from pathlib import Path
from custom_components.desktop_assistant.tool_files.examples import install_examples
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
try:
    install_examples(Path(sys.argv[1]))
except OSError as err:
    print(err.errno)
"""


async def install(hass: HomeAssistant) -> dict:
    return await hass.services.async_call(
        DOMAIN, "install_examples", blocking=True, return_response=True
    )


async def run_tool(hass: HomeAssistant, tool: str, **arguments: str) -> str:
    response = await hass.services.async_call(
        DOMAIN,
        "run_tool",
        {"tool": tool, "arguments": arguments},
        blocking=True,
        return_response=True,
    )
    return response["result"]


def folder_of(hass: HomeAssistant) -> Path:
    return Path(hass.config.path(DOMAIN))


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """The config folder's files, but the database the integration writes to."""
    return {
        path.relative_to(folder).as_posix(): (path.read_bytes(), path.stat().st_mode)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.startswith("assistant.db")
    }


async def test_install_into_an_empty_folder(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    await setup_integration()
    with pytest.raises(ServiceValidationError) as unknown:
        await run_tool(hass, "now")
    assert unknown.value.translation_key == "unknown_tool"

    response = await install(hass)

    assert response == {"installed": EXAMPLE_FILES, "skipped": []}
    folder = folder_of(hass)
    for name in EXAMPLE_FILES:
        assert (folder / name).read_bytes() == (EXAMPLES / name).read_bytes(), name
    for name in HELPERS:
        assert (folder / name).stat().st_mode & 0o111 == 0o111, name
    assert not (folder / "tools" / "now.toml").stat().st_mode & 0o111
    # Reloaded: the tools answer at once, and the written config.toml holds
    # every key commented, so it loads as an empty [env].
    answer = await run_tool(hass, "weather")
    assert answer.startswith("error: "), answer
    assert "KEY" in answer
    assert tomllib.loads((folder / "config.toml").read_text()) == {"env": {}}
    assert ir.async_get(hass).issues == {}


async def test_install_keeps_the_users_files(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    folder = folder_of(hass)
    write_tool(folder, "weather", USER_WEATHER)
    (folder / "config.toml").write_text(USER_CONFIG)
    await setup_integration()

    response = await install(hass)

    assert response == {
        "installed": [
            name
            for name in EXAMPLE_FILES
            if name not in {"config.toml", "tools/weather.toml"}
        ],
        "skipped": ["config.toml", "tools/weather.toml"],
    }
    assert (folder / "tools" / "weather.toml").read_text() == USER_WEATHER
    assert (folder / "config.toml").read_text() == USER_CONFIG
    assert await run_tool(hass, "weather") == "sunny"


async def test_install_twice_changes_nothing(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    await setup_integration()
    await install(hass)
    folder = folder_of(hass)
    # The person fills in a setting after the first install.
    (folder / "config.toml").write_text(USER_CONFIG)
    before = snapshot(folder)

    assert await install(hass) == {"installed": [], "skipped": EXAMPLE_FILES}
    assert snapshot(folder) == before


def cut_install(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CUT_INSTALL, str(folder)],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )


async def test_an_install_cut_short_leaves_no_half_file(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    folder = folder_of(hass)
    folder.mkdir(parents=True, exist_ok=True)
    cut = await hass.async_add_executor_job(cut_install, folder)
    assert cut.stdout.split() == [str(errno.EFBIG)], cut.stderr
    assert (EXAMPLES / "config.toml").stat().st_size > 1000
    # Whatever is there is a whole copy, and no temporary file is left.
    assert list(folder.rglob("*")) == []
    await setup_integration()

    assert await install(hass) == {"installed": EXAMPLE_FILES, "skipped": []}
    for name in EXAMPLE_FILES:
        assert (folder / name).read_bytes() == (EXAMPLES / name).read_bytes(), name
    assert tomllib.loads((folder / "config.toml").read_text()) == {"env": {}}
    assert await run_tool(hass, "now")


async def test_install_into_a_folder_that_cannot_be_written(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    folder_of(hass).write_text("not a folder")
    await setup_integration()

    with pytest.raises(HomeAssistantError) as raised:
        await install(hass)

    assert raised.value.translation_key == "cannot_install_examples"
    assert "desktop_assistant" in str(raised.value)
    assert folder_of(hass).read_text() == "not a folder"


async def test_missing_tools_folder_is_fixed_through_repairs(
    hass: HomeAssistant, setup_integration: Setup, hass_client
) -> None:
    await setup_integration()
    issue = ir.async_get(hass).async_get_issue(DOMAIN, "no_tools_folder")
    assert issue is not None
    assert issue.is_fixable
    assert issue.severity == ir.IssueSeverity.WARNING
    assert issue.translation_placeholders == {"folder": "desktop_assistant/tools"}

    client = await hass_client()
    started = await client.post(
        "/api/repairs/issues/fix",
        json={"handler": DOMAIN, "issue_id": "no_tools_folder"},
    )
    form = await started.json()
    assert (form["type"], form["step_id"]) == ("form", "confirm")
    assert form["description_placeholders"] == {"folder": "desktop_assistant/tools"}
    assert not (folder_of(hass) / "tools").exists()

    finished = await client.post(f"/api/repairs/issues/fix/{form['flow_id']}")
    assert (await finished.json())["type"] == "create_entry"

    # Beside the tools, the folder holds the integration's database.
    installed = {
        name for name in snapshot(folder_of(hass)) if not name.startswith(DB_FILE)
    }
    assert installed == set(EXAMPLE_FILES)
    assert ir.async_get(hass).async_get_issue(DOMAIN, "no_tools_folder") is None
    assert await run_tool(hass, "now")


async def test_issue_is_raised_only_without_a_tools_folder(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    await setup_integration()
    issues = ir.async_get(hass)
    assert issues.async_get_issue(DOMAIN, "no_tools_folder") is None

    for path in (tool_folder / "tools").iterdir():
        path.unlink()
    (tool_folder / "tools").rmdir()
    await hass.services.async_call(DOMAIN, "reload", blocking=True)
    assert issues.async_get_issue(DOMAIN, "no_tools_folder") is not None


def unloaded_entry(hass: HomeAssistant) -> MockConfigEntry:
    """An entry to configure; it need not be loaded: its llama-server plays no part."""
    entry = MockConfigEntry(domain=DOMAIN, data={CONF_URL: "http://127.0.0.1:9/v1"})
    entry.add_to_hass(hass)
    return entry


async def install_from_the_menu(hass: HomeAssistant, entry: MockConfigEntry) -> dict:
    """Configure, then the menu's install item: what the person sees next."""
    options = hass.config_entries.options
    result = await options.async_init(entry.entry_id)
    assert (result["type"], result["step_id"]) == (FlowResultType.MENU, "init")
    assert "install_examples" in result["menu_options"]
    return await options.async_configure(
        result["flow_id"], {"next_step_id": "install_examples"}
    )


async def test_install_from_the_entrys_configure_button(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    await setup_integration()
    folder = folder_of(hass)
    write_tool(folder, "weather", USER_WEATHER)
    entry = unloaded_entry(hass)

    result = await install_from_the_menu(hass, entry)

    # Choosing it installs: no form, no box to tick; the answer says what.
    assert (result["type"], result["reason"]) == (
        FlowResultType.ABORT,
        "examples_installed",
    )
    placeholders = result["description_placeholders"]
    assert placeholders["folder"] == DOMAIN
    assert placeholders["skipped"] == "tools/weather.toml"
    assert placeholders["installed"].split(", ") == [
        name for name in EXAMPLE_FILES if name != "tools/weather.toml"
    ]
    assert entry.options == {}
    assert (folder / "tools" / "weather.toml").read_text() == USER_WEATHER
    assert await run_tool(hass, "weather") == "sunny"
    assert (await run_tool(hass, "search", query="rain")).startswith(
        "error: SEARXNG_URL is not set"
    )

    before = snapshot(folder)
    again = await install_from_the_menu(hass, entry)
    assert (again["type"], again["reason"]) == (
        FlowResultType.ABORT,
        "examples_already_installed",
    )
    assert snapshot(folder) == before


async def test_install_from_the_menu_into_a_folder_that_cannot_be_written(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    folder_of(hass).write_text("not a folder")
    await setup_integration()
    entry = unloaded_entry(hass)

    result = await install_from_the_menu(hass, entry)

    assert (result["type"], result["reason"]) == (
        FlowResultType.ABORT,
        "cannot_install_examples",
    )
    assert result["description_placeholders"] == {"folder": DOMAIN}
    assert folder_of(hass).read_text() == "not a folder"
    # Nothing is stuck: the menu opens again, and the record's options save.
    options = hass.config_entries.options
    menu = await options.async_init(entry.entry_id)
    form = await options.async_configure(menu["flow_id"], {"next_step_id": "record"})
    assert form["step_id"] == "record"


@pytest.mark.parametrize("language", ["en", "it", "nl", "de", "fr", "es"])
async def test_install_answers_are_translated(
    hass: HomeAssistant, setup_integration: Setup, language: str
) -> None:
    await setup_integration()
    options = await async_get_translations(hass, language, "options", {DOMAIN})
    prefix = f"component.{DOMAIN}.options"
    english = await async_get_translations(hass, "en", "options", {DOMAIN})
    for reason, placeholders in {
        "examples_installed": {"{folder}", "{installed}", "{skipped}"},
        "examples_already_installed": {"{folder}"},
        "cannot_install_examples": {"{folder}"},
    }.items():
        text = options[f"{prefix}.abort.{reason}"]
        assert all(placeholder in text for placeholder in placeholders), reason
        if language != "en":
            assert text != english[f"{prefix}.abort.{reason}"], reason
    assert options[f"{prefix}.step.init.menu_options.install_examples"]


async def test_install_is_described_and_translated(
    hass: HomeAssistant, setup_integration: Setup
) -> None:
    await setup_integration()
    descriptions = await async_get_all_descriptions(hass)
    assert descriptions[DOMAIN]["install_examples"]["fields"] == {}
    assert descriptions[DOMAIN]["install_examples"]["response"] == {"optional": True}
    services = await async_get_translations(hass, "en", "services", {DOMAIN})
    assert (
        services[f"component.{DOMAIN}.services.install_examples.name"]
        == "Install example tools"
    )
    issues = await async_get_translations(hass, "en", "issues", {DOMAIN})
    prefix = f"component.{DOMAIN}.issues.no_tools_folder"
    assert "{folder}" in issues[f"{prefix}.fix_flow.step.confirm.description"]
    assert issues[f"{prefix}.fix_flow.error.cannot_write"]
    options = await async_get_translations(hass, "en", "options", {DOMAIN})
    prefix = f"component.{DOMAIN}.options.step"
    assert options[f"{prefix}.init.menu_options.install_examples"]
    # The install is the menu's item, answered by an abort: no form of its own.
    assert f"{prefix}.install_examples.data.install_examples" not in options
