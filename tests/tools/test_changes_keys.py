"""Tool file keys of a tool that changes things: changes, destructive, confirm."""

from pathlib import Path

import pytest

from custom_components.desktop_assistant.tools import load_folder
from custom_components.desktop_assistant.tools.__main__ import main
from tests.harness.tool_files import WriteFolder

ADD = """
    description = "Add an event"
    command = ["add.sh", "{title}", "{start}"]
    changes = true
    confirm.en = "Add {title} on {start}?"
    confirm.it = "Aggiungo {title} il {start}?"
    confirm.en-gb = "Shall I add {title} on {start}?"

    [params.title]
    type = "string"
    description = "What"

    [params.start]
    type = "string"
    description = "When"
"""


def test_changes_tool_parses(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(tools={"add": ADD})
    loaded = load_folder(folder)
    assert loaded.problems == ()
    add = loaded.tools["add"]
    assert add.changes is True
    assert add.destructive is False
    assert add.confirm == {
        "en": "Add {title} on {start}?",
        "it": "Aggiungo {title} il {start}?",
        "en-gb": "Shall I add {title} on {start}?",
    }
    values = {"title": "Dentist", "start": "2026-12-01 10:00"}
    assert add.question("en", values) == "Add Dentist on 2026-12-01 10:00?"
    assert add.question("en-US", values) == "Add Dentist on 2026-12-01 10:00?"
    assert add.question("en_GB", values) == "Shall I add Dentist on 2026-12-01 10:00?"
    assert add.question("it-IT", values) == "Aggiungo Dentist il 2026-12-01 10:00?"
    assert add.question("de", values) is None
    # A value is inserted once, never read as a placeholder itself.
    assert add.question("en", {"title": "{start}", "start": "x"}) == "Add {start} on x?"


def test_read_only_by_default(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(tools={"now": 'description = "Time"\ncommand = ["date"]\n'})
    now = load_folder(folder).tools["now"]
    assert (now.changes, now.destructive, now.confirm) == (False, False, {})
    assert now.question("en", {}) is None


def test_destructive(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={
            "wipe": """
                description = "Delete every event"
                command = ["wipe.sh"]
                changes = true
                destructive = true
            """
        }
    )
    wipe = load_folder(folder).tools["wipe"]
    assert (wipe.changes, wipe.destructive, wipe.confirm) == (True, True, {})


COMMON = 'description = "x"\ncommand = ["x.sh", "{a}"]\n'
PARAM = '[params.a]\ntype = "string"\ndescription = "A"\n'

# Each case: the keys between the common ones and [params.a], then the
# problems as (key, message).
ERRORS = {
    "changes not a boolean": (
        'changes = "yes"\n',
        [("changes", "must be true or false")],
    ),
    "destructive not a boolean": (
        "changes = true\ndestructive = 1\n",
        [("destructive", "must be true or false")],
    ),
    "destructive without changes": (
        "destructive = true\n",
        [
            (
                "destructive",
                "needs changes = true: only a changing tool destroys",
            )
        ],
    ),
    "confirm without changes": (
        'confirm.en = "Do {a}?"\n',
        [("confirm", "needs changes = true: only a changing tool is confirmed")],
    ),
    "confirm not a table": (
        'changes = true\nconfirm = "Do it?"\n',
        [("confirm", 'must be confirm.<lang> = "question?" entries')],
    ),
    "confirm not a question": (
        'changes = true\nconfirm.en = "Doing {a}."\n',
        [
            (
                "confirm.en",
                "must end in a question mark, so the person is heard answering",
            )
        ],
    ),
    "confirm empty": (
        'changes = true\nconfirm.en = " "\n',
        [("confirm.en", "must be a non-empty string")],
    ),
    "confirm a list": (
        'changes = true\nconfirm.en = ["Do {a}?"]\n',
        [("confirm.en", "must be a non-empty string")],
    ),
    "confirm names no parameter": (
        'changes = true\nconfirm.en = "Do {b}?"\n',
        [("confirm.en", "{b} names no parameter (params: a)")],
    ),
    "confirm bad language": (
        'changes = true\nconfirm.english = "Do {a}?"\n',
        [("confirm.english", "bad language tag: use a code such as en, it or en-us")],
    ),
    "announce on a changes tool": (
        'changes = true\nannounce.en = ["Doing it."]\n',
        [("announce", "a tool with changes = true asks (confirm) instead")],
    ),
}


@pytest.mark.parametrize(("keys", "expected"), ERRORS.values(), ids=ERRORS.keys())
def test_errors(
    write_folder: WriteFolder,
    folder: Path,
    keys: str,
    expected: list[tuple[str, str]],
) -> None:
    write_folder(tools={"x": COMMON + keys + PARAM})
    loaded = load_folder(folder)
    assert [(p.key, p.message) for p in loaded.problems] == expected
    assert loaded.problems[0].file == "tools/x.toml"
    assert "x" not in loaded.tools


def test_check_names_the_problem(
    write_folder: WriteFolder, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_folder(tools={"add": ADD, "x": COMMON + 'confirm.en = "Do {a}?"\n' + PARAM})
    assert main(["check", str(folder)]) == 1
    assert capsys.readouterr().out == (
        "tools/x.toml: confirm: needs changes = true: "
        "only a changing tool is confirmed\n"
    )
