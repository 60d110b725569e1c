"""A copy of what the Wyoming package's build reads, for building it offline."""

from pathlib import Path
import shutil

ROOT = Path(__file__).resolve().parents[2]
# pyproject.toml's sources: its own package and the integration's waker.
SOURCES = (
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "wyoming_services",
    "custom_components/desktop_assistant/wake_on_lan",
)


def copy_package_source(source: Path) -> Path:
    """Copy the package's sources into `source` (made here); return it."""
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    return source
