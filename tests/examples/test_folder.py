"""The examples folder as a whole: `check` passes, helpers run, `now` answers."""

from datetime import datetime
import os
from pathlib import Path
import re
import subprocess
import sys
import tomllib
from zoneinfo import ZoneInfo

from custom_components.desktop_assistant.tools import load_folder

from .conftest import EXAMPLES, ZONE, ExampleFolder

REPO = EXAMPLES.parents[1]
HELPERS = ["calendar.py", "calendar_add.py", "search.py", "travel.py", "weather.py"]


def test_check_passes_on_the_examples() -> None:
    # `check` takes a config folder: examples/ is one whose tools/ are the examples.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "custom_components.desktop_assistant.tools",
            "check",
            "examples",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "ok: 6 tools: calendar, calendar_add, now, search, travel, weather\n",
        "",
    )


def test_every_command_is_a_helper_of_the_folder_or_on_path() -> None:
    folder = load_folder(EXAMPLES.parent)
    commands = {spec.name: spec.command[0] for spec in folder.tools.values()}

    assert commands == {
        "now": "date",
        "calendar": "calendar.py",
        "calendar_add": "calendar_add.py",
        "search": "search.py",
        "travel": "travel.py",
        "weather": "weather.py",
    }
    for helper in HELPERS:
        path = EXAMPLES / helper
        assert path.stat().st_mode & 0o111, f"{helper} is not executable"
        assert path.read_text().startswith("#!/usr/bin/env python3\n")


def test_examples_hold_no_personal_values() -> None:
    texts = "\n".join(
        path.read_text() for path in sorted(EXAMPLES.iterdir()) if path.is_file()
    )

    assert not re.search(r"/home/|/Users/|/work/", texts)


async def test_now(example_folder: ExampleFolder) -> None:
    before = datetime.now(ZoneInfo(ZONE))
    result = await example_folder.run("now")
    after = datetime.now(ZoneInfo(ZONE))

    assert result in {f"{moment:%A %d %B %Y, %H:%M}" for moment in (before, after)}


def test_helpers_answer_in_one_line_without_a_traceback(tmp_path: Path) -> None:
    # Run by hand with nothing set, each helper says what is missing.
    for helper in ["search.py", "travel.py", "calendar_add.py"]:
        done = subprocess.run(
            [str(EXAMPLES / helper), "x", "y"],
            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0
        assert done.stdout.startswith("error: ")
        assert done.stdout.count("\n") == 1
        assert done.stderr == ""


def test_one_copy_of_the_examples_ships_inside_the_integration() -> None:
    # HACS installs only custom_components/desktop_assistant/: the files live
    # there, and the repository's examples/ is a link to them.
    integration = REPO / "custom_components" / "desktop_assistant"
    assert (REPO / "examples").is_symlink()
    assert (REPO / "examples").resolve() == integration / "examples"
    # HACS downloads file contents: a link inside the integration would arrive
    # as a file holding its target.
    assert [path for path in integration.rglob("*") if path.is_symlink()] == []
    assert (integration / "examples" / "tools" / "weather.toml").is_file()


def test_config_toml_lists_every_setting_the_helpers_read() -> None:
    read = set()
    for helper in [*HELPERS, "helperlib.py"]:
        read |= set(
            re.findall(r"os\.environ\.get\(\"(\w+)\"", (EXAMPLES / helper).read_text())
        )
    template = (EXAMPLES.parent / "config.toml").read_text()
    commented = set(re.findall(r"^# (\w+) = \"", template, re.MULTILINE))

    assert "TOMTOM_API_KEY" in read
    assert commented == read
    assert tomllib.loads(template) == {"env": {}}
