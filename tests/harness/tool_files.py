"""Writing tool files and their helper scripts into a config folder, for tests."""

from collections.abc import Callable
from pathlib import Path
import sys
import textwrap

type WriteFolder = Callable[..., Path]


def write_script(path: Path, body: str) -> Path:
    """Write an executable script; `#!python` becomes this interpreter."""
    text = textwrap.dedent(body).lstrip()
    if text.startswith("#!python"):
        text = f"#!{sys.executable}" + text.removeprefix("#!python")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def write_tool(folder: Path, name: str, text: str) -> None:
    """Write `<folder>/tools/<name>.toml`, its text dedented."""
    (folder / "tools").mkdir(parents=True, exist_ok=True)
    (folder / "tools" / f"{name}.toml").write_text(
        textwrap.dedent(text).lstrip(), encoding="utf-8"
    )


def write_tool_files(folder: Path, tool_files: dict[str, str]) -> None:
    """Write tool files (name -> TOML) into a config folder's tools/."""
    for name, text in tool_files.items():
        write_tool(folder, name, text)
