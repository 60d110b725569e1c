"""Parsing a config folder: defaults, empty folders, and every error path."""

from pathlib import Path

import pytest

from custom_components.desktop_assistant.tools import Param, load_folder
from custom_components.desktop_assistant.tools.arguments import CONVERTERS
from custom_components.desktop_assistant.tools.spec import PARAM_TYPES
from tests.harness.tool_files import WriteFolder

WEATHER = """
    description = "Current weather and short forecast. Leave place empty for home."
    command = ["weather.sh", "{place}", "{when}"]
    timeout = 10
    announce.it = ["Controllo il meteo."]
    announce.en = ["Checking the weather.", "Let me look outside."]

    [params.place]
    type = "string"
    description = "City name, empty for home"

    [params.when]
    type = "string"
    description = "now, today or tomorrow"
"""


def test_missing_folder_is_valid_with_no_tools(folder: Path) -> None:
    loaded = load_folder(folder)
    assert loaded.tools == {}
    assert loaded.env == {}
    assert loaded.problems == ()


def test_empty_tools_folder_without_config_is_valid(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder()
    loaded = load_folder(folder)
    assert (loaded.tools, loaded.env, loaded.problems) == ({}, {}, ())


def test_seed_example_parses(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(tools={"weather": WEATHER})
    loaded = load_folder(folder)
    assert loaded.problems == ()
    weather = loaded.tools["weather"]
    assert weather.command == ("weather.sh", "{place}", "{when}")
    assert weather.timeout == 10
    assert weather.params == {
        "place": Param("place", "string", "City name, empty for home"),
        "when": Param("when", "string", "now, today or tomorrow"),
    }
    assert weather.announce == {
        "it": ("Controllo il meteo.",),
        "en": ("Checking the weather.", "Let me look outside."),
    }


def test_examples_are_read(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={
            "now": 'description = "Date and time"\ncommand = ["date"]\n'
            'examples = [" What day is it? ", "Is it Monday?"]\n'
        }
    )
    loaded = load_folder(folder)
    assert loaded.problems == ()
    assert loaded.tools["now"].examples == ("What day is it?", "Is it Monday?")


def test_words_are_read(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={
            "now": 'description = "Date and time"\ncommand = ["date"]\n'
            'words = [" clock ", "Uhrzeit"]\n'
        }
    )
    loaded = load_folder(folder)
    assert loaded.problems == ()
    assert loaded.tools["now"].words == ("clock", "Uhrzeit")


def test_defaults(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(tools={"now": 'description = "Date and time"\ncommand = ["date"]\n'})
    now = load_folder(folder).tools["now"]
    assert now.timeout == 10.0
    assert now.params == {}
    assert now.announce == {}
    assert now.examples == ()
    assert now.words == ()


def test_config_env_is_read(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(config='[env]\nSEARXNG_URL = "http://searxng.example.org"\n')
    assert load_folder(folder).env == {"SEARXNG_URL": "http://searxng.example.org"}


def test_announcements_by_language(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(
        tools={
            "weather": WEATHER,
            "search": """
                description = "Web search"
                command = ["search.sh", "{query}"]
                announce.en-gb = ["Searching, one moment."]
                [params.query]
                type = "string"
                description = "What to search"
            """,
        }
    )
    tools = load_folder(folder).tools
    assert tools["weather"].announcements("it") == ("Controllo il meteo.",)
    assert tools["weather"].announcements("en-US") == tools["weather"].announce["en"]
    assert tools["weather"].announcements("de") == ()
    assert tools["weather"].announcements(None) == ()
    assert tools["search"].announcements("en") == ("Searching, one moment.",)
    assert tools["search"].announcements("en_GB") == ("Searching, one moment.",)


# Each case: the tool file, then (key, words of the message) of every problem.
ERROR_CASES = {
    "unknown key": (
        'description = "x"\ncommand = ["date"]\nretries = 3\n',
        [("retries", "unknown key")],
    ),
    "examples not a list": (
        'description = "x"\ncommand = ["date"]\nexamples = "What time is it?"\n',
        [("examples", "a list of at most 24 questions")],
    ),
    "an empty example": (
        'description = "x"\ncommand = ["date"]\nexamples = ["Time?", " "]\n',
        [("examples", "each of 1 to 200 characters")],
    ),
    "too many examples": (
        'description = "x"\ncommand = ["date"]\nexamples = ['
        + ", ".join(f'"q{n}"' for n in range(25))
        + "]\n",
        [("examples", "at most 24 questions")],
    ),
    "words not a list": (
        'description = "x"\ncommand = ["date"]\nwords = "clock"\n',
        [("words", "a list of at most 200 words")],
    ),
    "a word too long": (
        'description = "x"\ncommand = ["date"]\nwords = ["clock", "'
        + "x" * 41
        + '"]\n',
        [("words", "each of 1 to 40 characters")],
    ),
    "too many words": (
        'description = "x"\ncommand = ["date"]\nwords = ['
        + ", ".join(f'"w{n}"' for n in range(201))
        + "]\n",
        [("words", "at most 200 words")],
    ),
    "missing description": ('command = ["date"]\n', [("description", "missing")]),
    "missing command": ('description = "x"\n', [("command", "missing")]),
    "description not text": (
        'description = 5\ncommand = ["date"]\n',
        [("description", "non-empty string")],
    ),
    "command not a list": (
        'description = "x"\ncommand = "date +%s"\n',
        [("command", "list of strings")],
    ),
    "command element not text": (
        'description = "x"\ncommand = ["date", 5]\n',
        [("command[1]", "must be a string")],
    ),
    "program from an argument": (
        'description = "x"\ncommand = ["{prog}"]\n'
        '[params.prog]\ntype = "string"\ndescription = "p"\n',
        [("command[0]", "must name the program")],
    ),
    "an argument as shell code": (
        'description = "x"\ncommand = ["/bin/sh", "-ec", "echo {text}"]\n'
        '[params.text]\ntype = "string"\ndescription = "p"\n',
        [("command[2]", "inside an element that /bin/sh reads as code")],
    ),
    "an argument as python code": (
        'description = "x"\ncommand = ["python3.12", "-c", "print({n})"]\n'
        '[params.n]\ntype = "integer"\ndescription = "p"\n',
        [("command[2]", "inside an element that python3.12 reads as code")],
    ),
    "placeholder naming no parameter": (
        'description = "x"\ncommand = ["echo", "--city={place}"]\n',
        [("command[1]", "{place} names no parameter")],
    ),
    "timeout as text": (
        'description = "x"\ncommand = ["date"]\ntimeout = "10"\n',
        [("timeout", "number of seconds")],
    ),
    "timeout too long to be a float": (
        'description = "x"\ncommand = ["date"]\ntimeout = 1' + "0" * 400 + "\n",
        [("timeout", "at most 86400 seconds")],
    ),
    "timeout of more than a day": (
        'description = "x"\ncommand = ["date"]\ntimeout = 86401\n',
        [("timeout", "at most 86400 seconds")],
    ),
    "timeout infinite": (
        'description = "x"\ncommand = ["date"]\ntimeout = inf\n',
        [("timeout", "at most 86400 seconds")],
    ),
    "timeout zero": (
        'description = "x"\ncommand = ["date"]\ntimeout = 0\n',
        [("timeout", "more than 0")],
    ),
    "bad parameter name": (
        'description = "x"\ncommand = ["date"]\n'
        '[params.Place]\ntype = "string"\ndescription = "p"\n',
        [("params.Place", "bad parameter name")],
    ),
    "bad parameter type": (
        'description = "x"\ncommand = ["date", "{n}"]\n'
        '[params.n]\ntype = "int"\ndescription = "p"\n',
        [("params.n.type", "string, integer, number, boolean")],
    ),
    "parameter type as an array": (
        'description = "x"\ncommand = ["date", "{n}"]\n'
        '[params.n]\ntype = ["integer"]\ndescription = "p"\n',
        [("params.n.type", "string, integer, number, boolean")],
    ),
    "parameter without description": (
        'description = "x"\ncommand = ["date"]\n[params.n]\ntype = "integer"\n',
        [("params.n.description", "missing")],
    ),
    "parameter not a table": (
        'description = "x"\ncommand = ["date"]\nparams.n = "integer"\n',
        [("params.n", "must be a table")],
    ),
    "top-level key after a params table": (
        'description = "x"\ncommand = ["date"]\n'
        '[params.n]\ntype = "integer"\ndescription = "p"\ntimeout = 5\n',
        [("params.n.timeout", "must come before the [params.*] tables")],
    ),
    "announce not a list": (
        'description = "x"\ncommand = ["date"]\nannounce.en = "Checking."\n',
        [("announce.en", "list of non-empty strings")],
    ),
    "announce with a bad language": (
        'description = "x"\ncommand = ["date"]\nannounce.english1 = ["Hi."]\n',
        [("announce.english1", "bad language tag")],
    ),
}


@pytest.mark.parametrize(("text", "expected"), ERROR_CASES.values(), ids=ERROR_CASES)
def test_error_names_file_and_key(
    write_folder: WriteFolder,
    folder: Path,
    text: str,
    expected: list[tuple[str, str]],
) -> None:
    write_folder(tools={"broken": text})
    loaded = load_folder(folder)
    assert "broken" not in loaded.tools
    assert [(problem.file, problem.key) for problem in loaded.problems] == [
        ("tools/broken.toml", key) for key, _ in expected
    ]
    for problem, (key, words) in zip(loaded.problems, expected, strict=True):
        assert words in problem.message
        assert str(problem).startswith(f"tools/broken.toml: {key}: ")


def test_every_problem_of_a_file_is_reported(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={
            "broken": """
                command = ["{x}", "{y}"]
                timeout = -1
                color = "red"
                [params.x]
                type = "strng"
                description = "x"
            """
        }
    )
    keys = {problem.key for problem in load_folder(folder).problems}
    assert keys == {
        "color",
        "params.x.type",
        "description",
        "command[0]",
        "command[1]",
        "timeout",
    }


def test_an_argument_after_the_shell_code_is_only_an_argument(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={
            "say": 'description = "x"\n'
            'command = ["sh", "-c", "echo \\"$1\\"", "sh", "{text}"]\n'
            '[params.text]\ntype = "string"\ndescription = "p"\n'
        }
    )
    loaded = load_folder(folder)
    assert loaded.problems == ()
    assert loaded.tools["say"].command == ("sh", "-c", 'echo "$1"', "sh", "{text}")


def test_toml_syntax_error_names_the_file_and_line(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(tools={"broken": 'description = "x"\ncommand = date\ntimeout = 5\n'})
    (problem,) = load_folder(folder).problems
    assert problem.file == "tools/broken.toml"
    assert "not valid TOML" in problem.message
    assert "line 2" in problem.message


@pytest.mark.parametrize(
    "text",
    [
        "description = " + "[" * 5000 + "]" * 5000 + "\n",
        "a" + ".a" * 5000 + " = 1\n",
        "timeout = " + "9" * 5000 + "\n",
    ],
    ids=["arrays nested deep", "a key of many parts", "an integer of 5000 digits"],
)
def test_toml_past_tomllibs_limits_leaves_out_only_that_tool(
    write_folder: WriteFolder, folder: Path, text: str
) -> None:
    write_folder(
        tools={"broken": text, "fine": 'description = "x"\ncommand = ["date"]\n'}
    )
    loaded = load_folder(folder)
    assert set(loaded.tools) == {"fine"}
    (problem,) = loaded.problems
    assert (problem.file, problem.key) == ("tools/broken.toml", None)
    assert "too long or nested too deep" in problem.message


def test_file_that_is_not_utf8(write_folder: WriteFolder, folder: Path) -> None:
    write_folder()
    (folder / "tools" / "latin.toml").write_bytes(b'description = "caf\xe9"\n')
    (problem,) = load_folder(folder).problems
    assert (problem.file, problem.key) == ("tools/latin.toml", None)
    assert "not UTF-8" in problem.message


@pytest.mark.parametrize("name", ["Weather", "web-search", "météo", "two words"])
def test_bad_tool_name(write_folder: WriteFolder, folder: Path, name: str) -> None:
    write_folder(tools={name: 'description = "x"\ncommand = ["date"]\n'})
    loaded = load_folder(folder)
    assert loaded.tools == {}
    (problem,) = loaded.problems
    assert problem.file == f"tools/{name}.toml"
    assert "bad tool name" in problem.message


def test_broken_file_disables_only_that_tool(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={
            "weather": WEATHER,
            "broken": 'description = "x"\n',
            "now": 'description = "Date"\ncommand = ["date"]\n',
        }
    )
    loaded = load_folder(folder)
    assert sorted(loaded.tools) == ["now", "weather"]
    assert {problem.file for problem in loaded.problems} == {"tools/broken.toml"}


def test_other_files_in_tools_are_helpers(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        tools={"now": 'description = "Date"\ncommand = ["date"]\n'},
        scripts={"weather.sh": "#!/bin/sh\necho sunny\n", "README": "notes\n"},
    )
    (folder / "tools" / ".now.toml.swp").write_text("editor junk")
    (folder / "tools" / "lib").mkdir()
    loaded = load_folder(folder)
    assert list(loaded.tools) == ["now"]
    assert loaded.problems == ()


def test_names_with_the_same_intent_name(
    write_folder: WriteFolder, folder: Path
) -> None:
    tool = 'description = "x"\ncommand = ["date"]\n'
    write_folder(tools={"web_search": tool, "web__search": tool})
    loaded = load_folder(folder)
    assert list(loaded.tools) == ["web__search"]
    (problem,) = loaded.problems
    assert problem.file == "tools/web_search.toml"
    assert "WebSearch" in problem.message


def test_config_unknown_key_and_bad_env_values(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        config="""
            llm = "http://localhost:8181/v1"
            [env]
            GOOD = "kept"
            PORT = 8080
            SECRET_NUMBER = 271828
        """
    )
    loaded = load_folder(folder)
    assert loaded.env == {"GOOD": "kept"}
    assert [(p.file, p.key) for p in loaded.problems] == [
        ("config.toml", "llm"),
        ("config.toml", "env.PORT"),
        ("config.toml", "env.SECRET_NUMBER"),
    ]
    # [env] holds secrets: a message never quotes a value.
    assert not any("271828" in str(problem) for problem in loaded.problems)


def test_config_env_not_a_table(write_folder: WriteFolder, folder: Path) -> None:
    write_folder(config='env = "SEARXNG_URL=http://x"\n')
    loaded = load_folder(folder)
    assert loaded.env == {}
    assert [(p.file, p.key) for p in loaded.problems] == [("config.toml", "env")]
    assert "http://x" not in str(loaded.problems[0])


def test_config_shown_names_env_entries(
    write_folder: WriteFolder, folder: Path
) -> None:
    write_folder(
        config="""
            shown = ["TRAVEL_HOME"]
            [env]
            TRAVEL_HOME = "Domplein 1, Utrecht"
            TOMTOM_API_KEY = "k-0d9f77"
        """
    )
    loaded = load_folder(folder)
    assert loaded.problems == ()
    assert loaded.shown == {"TRAVEL_HOME"}
    assert loaded.secrets == ["k-0d9f77"]


@pytest.mark.parametrize(
    ("shown", "message"),
    [
        ('"TRAVEL_HOME"', 'must be a list of [env] names: ["TRAVEL_HOME"]'),
        ("[1]", 'must be a list of [env] names: ["TRAVEL_HOME"]'),
        ('["TRAVEL_HOEM"]', "'TRAVEL_HOEM' names no [env] entry"),
    ],
)
def test_config_bad_shown(
    write_folder: WriteFolder, folder: Path, shown: str, message: str
) -> None:
    write_folder(config=f'shown = {shown}\n[env]\nTRAVEL_HOME = "Utrecht"\n')
    loaded = load_folder(folder)
    assert [str(problem) for problem in loaded.problems] == [
        f"config.toml: shown: {message}"
    ]
    # Every value stays secret until `shown` is right.
    assert loaded.secrets == ["Utrecht"]


def test_tools_that_is_a_file(folder: Path) -> None:
    folder.mkdir()
    (folder / "tools").write_text("not a folder")
    (problem,) = load_folder(folder).problems
    assert (problem.file, problem.message) == ("tools", "must be a folder")


def test_every_parameter_type_has_one_converter() -> None:
    """The type names are written once (PARAM_TYPES); arguments follow them."""
    assert set(CONVERTERS) == set(PARAM_TYPES.values())
    assert len(set(PARAM_TYPES.values())) == len(PARAM_TYPES)
