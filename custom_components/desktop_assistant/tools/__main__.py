"""Command line for people writing tool files.

python -m custom_components.desktop_assistant.tools check DIR
python -m custom_components.desktop_assistant.tools run DIR NAME '{"arg": "value"}'
"""

import argparse
import asyncio
from pathlib import Path
import sys

from .loader import load_folder
from .registry import ToolRegistry


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m custom_components.desktop_assistant.tools",
        description="Check a desktop_assistant config folder or run one of its tools.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check", help="print every problem of the folder; exit 1 if there is one"
    )
    check.add_argument("folder", type=Path, help="the config folder (holds tools/)")
    run = commands.add_parser(
        "run", help="run a tool and print exactly the text the model would receive"
    )
    run.add_argument("folder", type=Path, help="the config folder (holds tools/)")
    run.add_argument("name", help="the tool name (its file name without .toml)")
    run.add_argument("arguments", nargs="?", default="{}", help="JSON object")
    options = parser.parse_args(argv)
    if options.command == "check":
        return _check(options.folder)
    return _run(options.folder, options.name, options.arguments)


def _check(folder: Path) -> int:
    loaded = load_folder(folder)
    for problem in loaded.problems:
        print(problem)
    if loaded.problems:
        return 1
    if not folder.exists():
        print(f"ok: no tools ({folder} does not exist)")
    elif loaded.tools:
        count = f"{len(loaded.tools)} tool{'s' if len(loaded.tools) > 1 else ''}"
        print(f"ok: {count}: {', '.join(sorted(loaded.tools))}")
    else:
        print("ok: no tools")
    return 0


def _run(folder: Path, name: str, arguments: str) -> int:
    loaded = load_folder(folder)
    # Problems go to stderr: stdout carries only what the model would receive.
    for problem in loaded.problems:
        print(problem, file=sys.stderr)
    result = asyncio.run(ToolRegistry(loaded).async_run(name, arguments))
    print(result)
    return 1 if result.startswith("error:") else 0


if __name__ == "__main__":
    sys.exit(main())
