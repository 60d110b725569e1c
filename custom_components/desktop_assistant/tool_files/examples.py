"""The example tools shipped inside the integration, copied into a config folder.

`examples/` is a config folder of its own: `config.toml` (every [env] key
the examples read, commented) and `tools/`. Installing never overwrites: a
file that is already there is kept and reported as skipped.
"""

import contextlib
from dataclasses import dataclass
import os
from pathlib import Path
import shutil

EXAMPLES = Path(__file__).parents[1] / "examples"


@dataclass(frozen=True)
class InstallReport:
    """What installing copied and what it left alone, as paths in the folder."""

    installed: tuple[str, ...]
    skipped: tuple[str, ...]


def example_files() -> list[Path]:
    """Return the files to install, relative to `EXAMPLES`, sorted."""
    return sorted(
        path.relative_to(EXAMPLES)
        for path in EXAMPLES.rglob("*")
        if path.is_file()
        and not any(
            part == "__pycache__" or part.startswith(".")
            for part in path.relative_to(EXAMPLES).parts
        )
    )


def install_examples(root: Path) -> InstallReport:
    """Copy the examples into the config folder `root`, keeping what is there.

    A script (a file starting with `#!`) is made executable where it is
    readable: HACS and file editors do not keep the bit.
    """
    installed: list[str] = []
    skipped: list[str] = []
    for relative in example_files():
        source = EXAMPLES / relative
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Exclusive creation: never replaces a file, even one written
            # between a check and the copy.
            with source.open("rb") as reader, target.open("xb") as writer:
                shutil.copyfileobj(reader, writer)
        except FileExistsError:
            skipped.append(relative.as_posix())
            continue
        if source.read_bytes().startswith(b"#!"):
            mode = target.stat().st_mode
            # Some mounts (a Samba share) refuse modes; the tool runner runs
            # .py and .sh helpers without the bit.
            with contextlib.suppress(OSError):
                os.chmod(target, mode | (mode & 0o444) >> 2)
        installed.append(relative.as_posix())
    return InstallReport(tuple(installed), tuple(skipped))
