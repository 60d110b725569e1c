"""Helpers for tests of the tools package: config folders written into tmp_path."""

from pathlib import Path
import textwrap

import pytest

from tests.harness.tool_files import WriteFolder, write_script, write_tool_files


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Where a test's config folder goes (not created)."""
    return tmp_path / "desktop_assistant"


@pytest.fixture
def write_folder(folder: Path) -> WriteFolder:
    """Write tool files, scripts and config.toml into the config folder."""

    def write(
        tools: dict[str, str] | None = None,
        scripts: dict[str, str] | None = None,
        config: str | None = None,
    ) -> Path:
        (folder / "tools").mkdir(parents=True, exist_ok=True)
        write_tool_files(folder, tools or {})
        for name, body in (scripts or {}).items():
            write_script(folder / "tools" / name, body)
        if config is not None:
            (folder / "config.toml").write_text(
                textwrap.dedent(config).lstrip(), encoding="utf-8"
            )
        return folder

    return write
