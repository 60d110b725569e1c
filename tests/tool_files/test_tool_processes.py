"""Through the run_tool action: scripts without the executable bit, 8 at once."""

import asyncio
import os
from pathlib import Path
import sys

from homeassistant.core import HomeAssistant

from tests.harness.tool_files import write_script, write_tool

from ..tools.test_processes import HOLD_PY, HOLD_TOOL, running
from .conftest import DOMAIN, Setup


async def run_tool(hass: HomeAssistant, tool: str) -> dict:
    return await hass.services.async_call(
        DOMAIN, "run_tool", {"tool": tool}, blocking=True, return_response=True
    )


def write_plain_scripts(folder: Path) -> None:
    """Scripts as copied through Samba or the File editor: mode 644."""
    tools = folder / "tools"
    (tools / "hello.py").write_text("import sys\nprint('py', sys.executable)\n")
    (tools / "hello.sh").write_text('echo "sh $0"\n')
    (tools / "hello.rb").write_text("puts 'rb'\n")
    for name in ("hello.py", "hello.sh", "hello.rb"):
        (tools / name).chmod(0o644)


async def test_scripts_without_the_executable_bit(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup
) -> None:
    for kind in ("py", "sh", "rb"):
        write_tool(
            tool_folder, kind, f'description = "x"\ncommand = ["hello.{kind}"]\n'
        )
    await hass.async_add_executor_job(write_plain_scripts, tool_folder)
    await setup_integration()

    assert await run_tool(hass, "py") == {"result": f"py {sys.executable}"}
    assert await run_tool(hass, "sh") == {
        "result": f"sh {tool_folder / 'tools' / 'hello.sh'}"
    }
    assert await run_tool(hass, "rb") == {
        "result": "error: tools/hello.rb is not executable (chmod +x)"
    }


async def test_at_most_8_tools_at_once_in_home_assistant(
    hass: HomeAssistant, tool_folder: Path, setup_integration: Setup, tmp_path: Path
) -> None:
    run_dir, release = tmp_path / "running", tmp_path / "release"
    run_dir.mkdir()
    write_tool(tool_folder, "hold", HOLD_TOOL)
    write_tool(
        tool_folder,
        "quick",
        'description = "x"\ncommand = ["echo", "quick"]\ntimeout = 0.5\n',
    )
    write_script(tool_folder / "tools" / "hold.py", HOLD_PY)
    (tool_folder / "config.toml").write_text(
        f'[env]\nRUN_DIR = "{run_dir}"\nRELEASE = "{release}"\n'
    )
    await setup_integration()

    holds = [asyncio.create_task(run_tool(hass, "hold")) for _ in range(12)]
    await running(run_dir, 8)
    await asyncio.sleep(0.5)
    assert len(os.listdir(run_dir)) == 8
    assert await run_tool(hass, "quick") == {
        "result": "error: echo timed out after 0.5 s waiting for other tools to finish"
    }
    release.touch()
    assert await asyncio.gather(*holds) == [{"result": "released"}] * 12
