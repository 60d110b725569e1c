"""A config folder holding a copy of examples/tools/, and the web stand-ins."""

from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
import json
from pathlib import Path
import shutil
from typing import Any

import pytest

from custom_components.desktop_assistant.tools import ToolRegistry, load_folder
from tests.harness.web_stand_ins import OpenWeatherMap, SearXNG, TomTom, serving

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tools"
# The local zone of every helper run in these tests.
ZONE = "Europe/Rome"


def copy_examples(tools_dir: Path) -> None:
    """Copy examples/tools/ (tool files and helpers, modes kept) to `tools_dir`."""
    shutil.copytree(EXAMPLES, tools_dir, ignore=shutil.ignore_patterns("__pycache__"))


def config_toml(env: Mapping[str, str], shown: Iterable[str] = ()) -> str:
    """Return a config.toml whose [env] holds `env`; `shown` names visible ones."""
    lines = [f"shown = {json.dumps(list(shown))}", "[env]"]
    lines += [f"{name} = {json.dumps(value)}" for name, value in env.items()]
    return "\n".join(lines) + "\n"


@dataclass
class ExampleFolder:
    """A config folder with the example tools; `env` becomes its [env]."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)
    # [env] names whose values answers may show; all others become ***.
    shown: set[str] = field(default_factory=set)

    async def run(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Run a tool as the integration does; return what the model receives."""
        (self.root / "config.toml").write_text(config_toml(self.env, self.shown))
        folder = load_folder(self.root)
        assert not folder.problems
        return await ToolRegistry(folder).async_run(name, arguments or {})


@pytest.fixture
def example_folder(tmp_path: Path) -> ExampleFolder:
    """The example tools in a config folder; HOME and caches point into tmp_path."""
    root = tmp_path / "desktop_assistant"
    copy_examples(root / "tools")
    return ExampleFolder(
        root,
        {
            "HOME": str(tmp_path / "home"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "TZ": ZONE,
            "TOOL_WEB_TIMEOUT": "5",
        },
        # As config.toml suggests: a time zone is no secret.
        {"TZ"},
    )


@pytest.fixture
async def owm(socket_enabled: None) -> AsyncIterator[OpenWeatherMap]:
    async with serving(OpenWeatherMap()) as stand_in:
        yield stand_in


@pytest.fixture
async def searxng(socket_enabled: None) -> AsyncIterator[SearXNG]:
    async with serving(SearXNG()) as stand_in:
        yield stand_in


@pytest.fixture
async def tomtom(socket_enabled: None) -> AsyncIterator[TomTom]:
    async with serving(TomTom()) as stand_in:
        yield stand_in
