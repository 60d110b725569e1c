"""Writing tool helper scripts for tests."""

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
