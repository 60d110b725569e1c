"""Read a config folder: `config.toml` ([env]) and `tools/<name>.toml`.

Every problem names its file and key. A broken tool file leaves out only that
tool; a problem in config.toml leaves out only the bad [env] entries.
"""

from collections.abc import Callable
from pathlib import Path
import re
import tomllib
from typing import Any

from .guard import refusal
from .spec import (
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    NAME,
    PARAM_TYPES,
    PLACEHOLDER,
    Param,
    Problem,
    ToolFolder,
    ToolSpec,
    camel_case,
)

CONFIG_FILE = "config.toml"
TOOLS_DIR = "tools"
CONFIG_KEYS = frozenset({"env", "shown"})
TOOL_KEYS = frozenset(
    {
        "description",
        "command",
        "timeout",
        "announce",
        "examples",
        "words",
        "changes",
        "destructive",
        "confirm",
        "params",
    }
)
PARAM_KEYS = frozenset({"type", "description"})
# Example questions a tool file may give, and their longest: the first goes
# into the tool's description for the model.
MAX_EXAMPLES = 24
MAX_EXAMPLE = 200
# Words for what a tool is about, in the household's languages.
MAX_WORDS = 200
MAX_WORD = 40
LANGUAGE = re.compile(r"[a-z]{2,3}(-[a-z0-9]+)*", re.IGNORECASE)
# What a confirm question ends with, so a satellite keeps listening for the
# answer (Home Assistant's own test: question marks, Greek and full-width).
QUESTION_MARKS = ("?", ";", "\uff1f")

type Report = Callable[[str | None, str], None]


def load_folder(root: Path) -> ToolFolder:
    """Parse the config folder at `root`; a missing folder has no tools."""
    problems: list[Problem] = []
    if root.exists() and not root.is_dir():
        problems.append(Problem(root.name, None, "must be a folder"))
        return ToolFolder(root, problems=tuple(problems))
    env, shown = _load_config(root / CONFIG_FILE, problems)
    tools = _load_tools(root / TOOLS_DIR, problems)
    return ToolFolder(root, tools=tools, env=env, problems=tuple(problems), shown=shown)


def _reporter(file: str, problems: list[Problem]) -> Report:
    def report(key: str | None, message: str) -> None:
        problems.append(Problem(file, key, message))

    return report


def _read_toml(path: Path, report: Report) -> dict[str, Any] | None:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as err:
        report(None, f"cannot be read: {err.strerror or err}")
    except tomllib.TOMLDecodeError as err:
        report(None, f"is not valid TOML: {err}")
    except UnicodeDecodeError:
        report(None, "is not valid TOML: the file is not UTF-8 text")
    except (ValueError, RecursionError):
        # tomllib's own limits: an integer of thousands of digits, arrays or
        # dotted keys nested a thousand deep.
        report(None, "is not valid TOML: a value is too long or nested too deep")
    return None


def _load_config(
    path: Path, problems: list[Problem]
) -> tuple[dict[str, str], frozenset[str]]:
    """Return config.toml's [env] and `shown` names. No message quotes a value."""
    if not path.exists():
        return {}, frozenset()
    report = _reporter(CONFIG_FILE, problems)
    data = _read_toml(path, report)
    if data is None:
        return {}, frozenset()
    for key in data:
        if key not in CONFIG_KEYS:
            report(
                key, "unknown key: config.toml holds an [env] table and a shown list"
            )
    table = data.get("env", {})
    if not isinstance(table, dict):
        report("env", 'must be a table of NAME = "value" entries')
        table = {}
    env: dict[str, str] = {}
    for name, value in table.items():
        if not name or "=" in name or "\0" in name:
            report(f"env.{name}", "is not a valid environment variable name")
        elif not isinstance(value, str):
            report(f"env.{name}", "must be a string")
        elif "\0" in value:
            report(f"env.{name}", "must not contain a NUL character")
        else:
            env[name] = value
    return env, _parse_shown(data.get("shown", []), table, report)


def _parse_shown(
    value: object, table: dict[str, Any], report: Report
) -> frozenset[str]:
    """Names of [env] entries a tool's answer may show (a home town, not a key)."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        report("shown", 'must be a list of [env] names: ["TRAVEL_HOME"]')
        return frozenset()
    for name in value:
        if name not in table:
            report("shown", f"{name!r} names no [env] entry")
    return frozenset(value)


def _load_tools(tools_dir: Path, problems: list[Problem]) -> dict[str, ToolSpec]:
    if not tools_dir.exists():
        return {}
    if not tools_dir.is_dir():
        problems.append(Problem(TOOLS_DIR, None, "must be a folder"))
        return {}
    tools: dict[str, ToolSpec] = {}
    try:
        paths = sorted(tools_dir.iterdir())
    except OSError as err:
        problems.append(Problem(TOOLS_DIR, None, f"cannot be read: {err.strerror}"))
        return {}
    for path in paths:
        # Editor backups and lock files start with a dot.
        if path.suffix != ".toml" or path.name.startswith(".") or path.is_dir():
            continue
        file = f"{TOOLS_DIR}/{path.name}"
        if (spec := _load_tool(path, file, problems)) is not None:
            tools[spec.name] = spec
    _drop_intent_clashes(tools, problems)
    return tools


def _load_tool(path: Path, file: str, problems: list[Problem]) -> ToolSpec | None:
    report = _reporter(file, problems)
    name = path.name.removesuffix(".toml")
    if not NAME.fullmatch(name):
        report(
            None, f"bad tool name {name!r}: the file name is the tool name, a-z 0-9 _"
        )
        return None
    data = _read_toml(path, report)
    if data is None:
        return None
    return parse_tool(name, data, report)


def parse_tool(name: str, data: dict[str, Any], report: Report) -> ToolSpec | None:
    """Return the tool a file's TOML describes, or None after reporting why not."""
    reported: list[str | None] = []

    def check(key: str | None, message: str) -> None:
        reported.append(key)
        report(key, message)

    for key in data:
        if key not in TOOL_KEYS:
            check(key, "unknown key")
    params = _parse_params(data.get("params", {}), check)
    description = _required_text(data, "description", check)
    command = _parse_command(data.get("command"), params, check)
    timeout = _parse_timeout(data.get("timeout", DEFAULT_TIMEOUT), check)
    announce = _parse_announce(data.get("announce", {}), check)
    examples = _parse_texts(
        data,
        "examples",
        check,
        unit="questions",
        most=MAX_EXAMPLES,
        longest=MAX_EXAMPLE,
    )
    words = _parse_texts(
        data, "words", check, unit="words", most=MAX_WORDS, longest=MAX_WORD
    )
    changes = _parse_flag(data, "changes", check)
    destructive = _parse_flag(data, "destructive", check)
    confirm = _parse_confirm(data.get("confirm", {}), params, check)
    if not changes:
        if destructive:
            check("destructive", "needs changes = true: only a changing tool destroys")
        if confirm:
            check("confirm", "needs changes = true: only a changing tool is confirmed")
    elif announce:
        check("announce", "a tool with changes = true asks (confirm) instead")
    if reported or description is None or command is None:
        return None
    return ToolSpec(
        name=name,
        description=description,
        command=command,
        timeout=timeout,
        params=params,
        announce=announce,
        examples=examples,
        words=words,
        changes=changes,
        destructive=destructive,
        confirm=confirm,
    )


def _required_text(table: dict[str, Any], key: str, check: Report) -> str | None:
    value = table.get(key)
    if value is None:
        check(key, "is missing (required)")
    elif not isinstance(value, str) or not value.strip():
        check(key, "must be a non-empty string")
    else:
        return value
    return None


def _parse_params(table: object, check: Report) -> dict[str, Param]:
    if not isinstance(table, dict):
        check("params", "must be tables: [params.<name>] with type and description")
        return {}
    params: dict[str, Param] = {}
    for name, entry in table.items():
        key = f"params.{name}"
        if not NAME.fullmatch(name):
            check(key, "bad parameter name: use a-z 0-9 _")
            continue
        if not isinstance(entry, dict):
            check(key, "must be a table with type and description")
            continue
        for inner in entry:
            if inner not in PARAM_KEYS:
                check(f"{key}.{inner}", _unknown_param_key(inner))
        param_type = entry.get("type")
        # A TOML array or table is no type name (and no key of PARAM_TYPES).
        known = isinstance(param_type, str) and param_type in PARAM_TYPES
        if param_type is None:
            check(f"{key}.type", "is missing (required)")
        elif not known:
            check(f"{key}.type", f"must be one of {', '.join(PARAM_TYPES)}")
        description = _required_text(entry, "description", _prefixed(key, check))
        if known and description is not None:
            params[name] = Param(name, param_type, description)
        else:
            # Keeps placeholders naming it from being reported a second time.
            params[name] = Param(name, "string", "")
    return params


def _unknown_param_key(key: str) -> str:
    if key in TOOL_KEYS:
        # TOML puts keys written after a table header into that table.
        return "unknown key: top-level keys must come before the [params.*] tables"
    return "unknown key"


def _prefixed(prefix: str, check: Report) -> Report:
    def prefixed(key: str | None, message: str) -> None:
        check(f"{prefix}.{key}" if key else prefix, message)

    return prefixed


def _parse_command(
    value: object, params: dict[str, Param], check: Report
) -> tuple[str, ...] | None:
    if value is None:
        check("command", "is missing (required)")
        return None
    if not isinstance(value, list) or not value:
        check("command", 'must be a non-empty list of strings: ["program", "{arg}"]')
        return None
    ok = True
    for index, element in enumerate(value):
        key = f"command[{index}]"
        if not isinstance(element, str):
            check(key, "must be a string")
            ok = False
            continue
        names = PLACEHOLDER.findall(element)
        if index == 0 and (names or not element):
            check(key, "must name the program; an argument can never choose it")
            ok = False
        for placeholder in names:
            if placeholder not in params:
                known = ", ".join(params) or "none"
                check(key, f"{{{placeholder}}} names no parameter (params: {known})")
                ok = False
        if "\0" in element:
            check(key, "must not contain a NUL character")
            ok = False
    if ok and (refused := refusal(value)) is not None:
        check(f"command[{refused.index}]", refused.message)
        ok = False
    return tuple(value) if ok else None


def _parse_timeout(value: object, check: Report) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        check("timeout", "must be a number of seconds")
        return DEFAULT_TIMEOUT
    # Compared before any float(): an integer of 400 digits has no float.
    if not 0 < value <= MAX_TIMEOUT:
        check("timeout", f"must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
        return DEFAULT_TIMEOUT
    return float(value)


def _parse_texts(
    data: dict[str, Any], key: str, check: Report, *, unit: str, most: int, longest: int
) -> tuple[str, ...]:
    """A list of at most `most` short texts (`examples`: questions, `words`); a bad one is reported."""
    value = data.get(key, [])
    if (
        not isinstance(value, list)
        or len(value) > most
        or not all(
            isinstance(text, str) and 0 < len(text.strip()) <= longest for text in value
        )
    ):
        check(
            key,
            f"must be a list of at most {most} {unit}, each of 1 to {longest} characters",
        )
        return ()
    return tuple(text.strip() for text in value)


def _parse_announce(table: object, check: Report) -> dict[str, tuple[str, ...]]:
    if not isinstance(table, dict):
        check("announce", 'must be announce.<lang> = ["phrase", ...] entries')
        return {}
    announce: dict[str, tuple[str, ...]] = {}
    for language, phrases in table.items():
        key = f"announce.{language}"
        if not LANGUAGE.fullmatch(language):
            check(key, "bad language tag: use a code such as en, it or en-us")
        elif (
            not isinstance(phrases, list)
            or not phrases
            or not all(isinstance(phrase, str) and phrase.strip() for phrase in phrases)
        ):
            check(key, "must be a non-empty list of non-empty strings")
        else:
            announce[language.lower()] = tuple(phrases)
    return announce


def _parse_flag(table: dict[str, Any], key: str, check: Report) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        check(key, "must be true or false")
        return False
    return value


def _parse_confirm(
    table: object, params: dict[str, Param], check: Report
) -> dict[str, str]:
    if not isinstance(table, dict):
        check("confirm", 'must be confirm.<lang> = "question?" entries')
        return {}
    confirm: dict[str, str] = {}
    for language, question in table.items():
        key = f"confirm.{language}"
        if not LANGUAGE.fullmatch(language):
            check(key, "bad language tag: use a code such as en, it or en-us")
        elif not isinstance(question, str) or not question.strip():
            check(key, "must be a non-empty string")
        elif not question.rstrip().endswith(QUESTION_MARKS):
            check(key, "must end in a question mark, so the person is heard answering")
        elif unknown := [n for n in PLACEHOLDER.findall(question) if n not in params]:
            known = ", ".join(params) or "none"
            check(key, f"{{{unknown[0]}}} names no parameter (params: {known})")
        else:
            confirm[language.lower()] = question.strip()
    return confirm


def _drop_intent_clashes(tools: dict[str, ToolSpec], problems: list[Problem]) -> None:
    """Leave out a tool whose intent name another tool already has (a_b, a__b)."""
    seen: dict[str, str] = {}
    for name in sorted(tools):
        camel = camel_case(name)
        if (other := seen.get(camel)) is not None:
            del tools[name]
            problems.append(
                Problem(
                    f"{TOOLS_DIR}/{name}.toml",
                    None,
                    f"tool name {name!r} gives the same intent name ({camel}) "
                    f"as {other!r}: rename one of them",
                )
            )
        else:
            seen[camel] = name
