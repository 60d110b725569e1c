"""The example tools shipped inside the integration, copied into a config folder.

`examples/` is a config folder of its own: `config.toml` (every [env] key
the examples read, commented) and `tools/`. Installing never overwrites: a
file that is already there is kept and reported as skipped.
"""

import contextlib
from dataclasses import dataclass
import os
from pathlib import Path
import secrets

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
    readable: HACS and file editors do not keep the bit. Raises OSError when
    a file cannot be written; the files written before it are whole.
    """
    installed: list[str] = []
    skipped: list[str] = []
    for relative in example_files():
        source = EXAMPLES / relative
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _copy_whole(source, target):
            skipped.append(relative.as_posix())
            continue
        installed.append(relative.as_posix())
    return InstallReport(tuple(installed), tuple(skipped))


def _copy_whole(source: Path, target: Path) -> bool:
    """Copy `source` to a new `target`, all of it or nothing; False if it exists.

    The copy is written beside the target under a temporary name and only
    then given the target's name, so a copy cut short (a full disk) leaves
    no half file that a later install would keep as the person's own.
    """
    if target.exists():
        return False
    data = source.read_bytes()
    # A dot name of its own: not loaded as a tool file, and two installs at
    # once never write into one file.
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.part")
    try:
        with temporary.open("xb") as writer:
            writer.write(data)
            # On disk before it has its name: a power cut leaves no empty file.
            writer.flush()
            os.fsync(writer.fileno())
        if data.startswith(b"#!"):
            mode = temporary.stat().st_mode
            # Some mounts (a Samba share) refuse modes; the tool runner runs
            # .py and .sh helpers without the bit.
            with contextlib.suppress(OSError):
                os.chmod(temporary, mode | (mode & 0o444) >> 2)
        return _rename_new(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _rename_new(temporary: Path, target: Path) -> bool:
    """Give a whole file its name, never replacing a file; False if one is there.

    A hard link fails when the name exists, even one written a moment ago;
    where the folder holds no hard links (some network shares) the file is
    renamed after a last check instead.
    """
    try:
        os.link(temporary, target)
    except FileExistsError:
        return False
    except OSError:
        if target.exists():
            return False
        os.replace(temporary, target)
    return True
