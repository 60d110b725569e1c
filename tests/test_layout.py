"""The layout's rules, read from the source: who may import whom.

- no import cycle inside the integration (imports for type checking only
  are left out: they never run);
- `tools/` imports nothing of Home Assistant (it is a plain-Python library
  with a command line of its own); of the package, only `text.py`, which
  imports nothing of either;
- nothing outside `tests/` imports `tests`, except `tests.harness`;
- no feature imports another feature's `websocket.py` or `schema.py`;
- `panel.py` imports of each feature only its setup module (`__init__.py`).
- `conversation.py` stays an adapter of at most 120 lines.
- `jobs/` imports no feature: features register their jobs with it.
- `wake_on_lan/` imports only the standard library and `wakeonlan`: the
  whisper relay's package ships it.
"""

import ast
from collections.abc import Iterator
from pathlib import Path
import re
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "custom_components.desktop_assistant"
PACKAGE_DIR = ROOT / "custom_components" / "desktop_assistant"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs, at any depth."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and is_type_checking(node):
            for child in node.orelse:
                yield from runtime_imports(child)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from runtime_imports(node)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The modules `path` imports: `from . import x` names module x if it is one."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in runtime_imports(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        found.add(base)
        found.update(
            f"{base}.{alias.name}"
            for alias in node.names
            if f"{base}.{alias.name}" in known
        )
    return found


def python_files(folder: Path) -> list[Path]:
    return [
        path
        for path in sorted(folder.rglob("*.py"))
        if "__pycache__" not in path.parts and ".sid" not in path.parts
    ]


def package_graph() -> dict[str, set[str]]:
    files = [
        path
        for path in python_files(PACKAGE_DIR)
        if "examples" not in path.relative_to(PACKAGE_DIR).parts
    ]
    known = {module_name(path) for path in files}
    graph = {}
    for path in files:
        imported = imported_modules(path, known)
        # Importing a.b.c runs a and a.b first: each is an edge of its own.
        edges = set()
        for module in imported:
            parts = module.split(".")
            edges.update(
                ".".join(parts[:end])
                for end in range(2, len(parts) + 1)
                if ".".join(parts[:end]) in known
            )
        graph[module_name(path)] = edges - {module_name(path)}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            # A package's own __init__ importing its submodules is how packages
            # work; the edge back from the submodule to its package is not.
            if target.startswith(module + "."):
                continue
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_no_import_cycle_inside_the_integration() -> None:
    graph = package_graph()
    assert len(graph) > 40, "the package was not read"
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a made-up circle is found."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_tools_imports_nothing_of_home_assistant() -> None:
    tools = PACKAGE_DIR / "tools"
    offending = {
        module_name(path): sorted(
            module
            for module in imported_modules(path, set())
            if module.split(".")[0] == "homeassistant"
            or (
                module.startswith(PACKAGE + ".")
                and not module.startswith(PACKAGE + ".tools")
                and module not in {PACKAGE + ".text", PACKAGE + ".clock"}
            )
        )
        for path in python_files(tools)
    }
    assert len(offending) >= 5
    assert {module: found for module, found in offending.items() if found} == {}


def test_text_imports_nothing_of_home_assistant_or_the_package() -> None:
    """`tools/` may import `text.py` only while it stays plain Python."""
    found = imported_modules(PACKAGE_DIR / "text.py", set())
    assert "unicodedata" in found
    assert {
        module
        for module in found
        if module.split(".")[0] in {"homeassistant", "custom_components"}
    } == set()


def test_wake_on_lan_imports_nothing_but_the_standard_library_and_wakeonlan() -> None:
    """The whisper relay's package ships this file: it must run without HA."""
    found = imported_modules(PACKAGE_DIR / "wake_on_lan" / "__init__.py", set())
    assert "wakeonlan" in found
    assert {
        module
        for module in found
        if module.split(".")[0] not in sys.stdlib_module_names
    } == {"wakeonlan"}


FEATURES = ("record", "memory", "tool_files", "server", "agent")


def test_jobs_imports_no_feature() -> None:
    """The record and memory register their jobs; `jobs/` knows only a `Job`."""
    known = {module_name(path) for path in python_files(PACKAGE_DIR)}
    jobs = python_files(PACKAGE_DIR / "jobs")
    offending = {
        module_name(path): sorted(
            module
            for module in imported_modules(path, known)
            if module.startswith(PACKAGE + ".") and module.split(".")[2] in FEATURES
        )
        for path in jobs
    }
    assert len(offending) >= 4, "jobs/ was not read"
    assert {module: found for module, found in offending.items() if found} == {}


# What times work by the time of day; only the jobs registry may use it.
TIME_OF_DAY_TIMER = "async_track_time_change"


def time_of_day_timers(folder: Path) -> list[str]:
    """The modules under `folder` outside `jobs/` that set a time-of-day timer."""
    return sorted(
        str(path.relative_to(folder))
        for path in python_files(folder)
        if "jobs" not in path.relative_to(folder).parts
        and TIME_OF_DAY_TIMER in path.read_text(encoding="utf-8")
    )


def test_only_the_jobs_registry_times_work_by_the_time_of_day() -> None:
    """A feature declares its job's time; the registry alone sets the timer."""
    assert (
        (PACKAGE_DIR / "jobs" / "timer.py")
        .read_text(encoding="utf-8")
        .count(TIME_OF_DAY_TIMER)
    )
    assert time_of_day_timers(PACKAGE_DIR) == []


JOB_RUNS_SQL = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+job_runs\b")


def job_runs_readers(folder: Path) -> list[str]:
    """The modules under `folder` outside `jobs/` with SQL of `job_runs`."""
    return sorted(
        str(path.relative_to(folder))
        for path in python_files(folder)
        if "jobs" not in path.relative_to(folder).parts
        and JOB_RUNS_SQL.search(path.read_text(encoding="utf-8"))
    )


def test_only_the_registry_reads_and_writes_the_runs() -> None:
    """An owner keys what it keeps by a run's id; the run itself is the registry's."""
    assert job_runs_readers(PACKAGE_DIR) == []


def test_job_runs_check_finds_a_query(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "websocket.py").write_text(
        'QUERY = "SELECT id FROM job_runs WHERE job = ?"\n'
    )
    assert job_runs_readers(tmp_path) == ["memory/websocket.py"]


def test_time_of_day_check_finds_a_timer(tmp_path: Path) -> None:
    """The check above can fail: a feature's own timer is found."""
    (tmp_path / "record").mkdir()
    (tmp_path / "record" / "retention.py").write_text(
        f"from homeassistant.helpers.event import {TIME_OF_DAY_TIMER}\n"
    )
    assert time_of_day_timers(tmp_path) == ["record/retention.py"]


@pytest.mark.parametrize(
    "folder", ["custom_components", "benchmarks", "evaluation", "wyoming_services"]
)
def test_only_the_harness_of_tests_is_imported_outside_tests(folder: str) -> None:
    offending = {
        str(path.relative_to(ROOT)): sorted(
            module
            for module in imported_modules(path, set())
            if module.split(".")[0] == "tests"
            and not module.startswith("tests.harness")
        )
        for path in python_files(ROOT / folder)
    }
    assert offending, f"no Python files in {folder}"
    assert {path: found for path, found in offending.items() if found} == {}


def test_harness_imports_no_test_module() -> None:
    """The harness is a library: it imports neither test files nor conftests."""
    offending = {
        str(path.relative_to(ROOT)): sorted(
            module
            for module in imported_modules(path, set())
            if module.split(".")[0] in {"tests", "benchmarks"}
            and not module.startswith("tests.harness")
        )
        for path in python_files(ROOT / "tests" / "harness")
    }
    assert {path: found for path, found in offending.items() if found} == {}


# A feature's commands and tables are its own: another reaches it through
# its functions, never its websocket handlers or migrations.
PRIVATE_MODULES = ("websocket", "schema")


# TEMPORARY, removed by the lead once the memory/jobs setup lands: the panel
# still registers these features' commands and marks interrupted jobs.
def feature_of(module: str) -> str | None:
    """The feature folder a module of the package is in (or sets up), if any."""
    if not module.startswith(PACKAGE + "."):
        return None
    folder = module.removeprefix(PACKAGE + ".").split(".")[0]
    return folder if (PACKAGE_DIR / folder / "__init__.py").is_file() else None


def foreign_private_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each feature module's imports of another feature's websocket or schema."""
    found = {}
    for module, imported in graph.items():
        if (feature := feature_of(module)) is None:
            continue
        if offending := sorted(
            target
            for target in imported
            if feature_of(target) not in {None, feature}
            and target.rpartition(".")[2] in PRIVATE_MODULES
        ):
            found[module] = offending
    return found


def past_setup_imports(imported: set[str]) -> list[str]:
    """The modules imported from inside a feature, not its setup module."""
    return sorted(
        module
        for module in imported
        if feature_of(module) is not None and module.count(".") > PACKAGE.count(".") + 1
    )


def test_no_feature_imports_another_features_commands_or_tables() -> None:
    graph = package_graph()
    assert any(feature_of(module) == "tool_files" for module in graph)
    assert foreign_private_imports(graph) == {}


def test_private_import_check_finds_one() -> None:
    """The check above can fail: a made-up reach into a schema is found."""
    reach = {
        f"{PACKAGE}.memory.queue": {f"{PACKAGE}.record.schema", f"{PACKAGE}.record"},
        f"{PACKAGE}.record.search": {f"{PACKAGE}.record.schema"},
        f"{PACKAGE}.tool_files": {f"{PACKAGE}.jobs.websocket"},
        PACKAGE: {f"{PACKAGE}.jobs.schema"},
    }
    assert foreign_private_imports(reach) == {
        f"{PACKAGE}.memory.queue": [f"{PACKAGE}.record.schema"],
        f"{PACKAGE}.tool_files": [f"{PACKAGE}.jobs.websocket"],
    }


def test_panel_imports_only_the_setup_of_features() -> None:
    panel = PACKAGE_DIR / "panel.py"
    known = {module_name(path) for path in python_files(PACKAGE_DIR)}
    imported = imported_modules(panel, known)
    assert f"{PACKAGE}.tool_files" in imported
    assert f"{PACKAGE}.memory" in imported
    assert past_setup_imports(imported) == []


def test_past_setup_check_finds_a_deep_import() -> None:
    """The check above can fail: a websocket module is not a setup module."""
    imported = {f"{PACKAGE}.server", f"{PACKAGE}.server.websocket", f"{PACKAGE}.const"}
    assert past_setup_imports(imported) == [f"{PACKAGE}.server.websocket"]


MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 500
# A function this close to the limit says why in a comment above it, so
# that it is not kept under the limit by squeezing.
NEAR_LIMIT = MAX_FUNCTION_LINES - 5
LONG_REASON = "# Long:"
PRODUCTION = (
    "custom_components",
    "wyoming_services",
    "benchmarks",
    "evaluation",
    "scripts",
)


def production_files(folder: Path) -> list[Path]:
    """The Python files of a folder; in `scripts/`, those run by Python."""
    if folder.name != "scripts":
        return python_files(folder)
    return [
        path
        for path in sorted(folder.iterdir())
        if path.is_file()
        and path.read_text(encoding="utf-8").startswith("#!/usr/bin/env python")
    ]


def says_why(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the comment above the function (and its decorators) gives a reason."""
    above = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    above -= 2
    while above >= 0 and lines[above].lstrip().startswith("#"):
        if lines[above].lstrip().startswith(LONG_REASON):
            return True
        above -= 1
    return False


def too_long(path: Path) -> list[str]:
    """The file if it is over the limit, and each function over or near its limit."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    if (count := text.count("\n")) > MAX_FILE_LINES:
        found.append(f"{count} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{node.name}: {length} lines")
            elif length > NEAR_LIMIT and not says_why(lines, node):
                found.append(f"{node.name}: {length} lines, and no {LONG_REASON}")
    return found


@pytest.mark.parametrize("folder", PRODUCTION)
def test_functions_and_files_a_reader_can_hold(folder: str) -> None:
    files = production_files(ROOT / folder)
    assert files, f"no Python files in {folder}"
    offending = {
        str(path.relative_to(ROOT)): found
        for path in files
        if (found := too_long(path))
    }
    assert offending == {}


def test_length_check_finds_a_long_function(tmp_path: Path) -> None:
    long_function = tmp_path / "long.py"
    body = "".join(f"    x{index} = {index}\n" for index in range(MAX_FUNCTION_LINES))
    long_function.write_text(f"def long():\n{body}")
    assert too_long(long_function) == [f"long: {MAX_FUNCTION_LINES + 1} lines"]


def test_length_check_asks_a_near_limit_function_why(tmp_path: Path) -> None:
    body = "".join(f"    x{index} = {index}\n" for index in range(NEAR_LIMIT))
    squeezed = tmp_path / "squeezed.py"
    squeezed.write_text(f"def squeezed():\n{body}")
    assert too_long(squeezed) == [
        f"squeezed: {NEAR_LIMIT + 1} lines, and no {LONG_REASON}"
    ]
    squeezed.write_text(
        f"{LONG_REASON} one table, column by column.\ndef squeezed():\n{body}"
    )
    assert too_long(squeezed) == []


# The conversation platform is an adapter, as HA core's ollama: it provides
# the LLM data, starts the record and hands the turn to agent/answer.py.
MAX_CONVERSATION_LINES = 120


def test_conversation_platform_stays_an_adapter() -> None:
    lines = (PACKAGE_DIR / "conversation.py").read_text().count("\n")
    assert lines <= MAX_CONVERSATION_LINES, f"conversation.py has {lines} lines"
