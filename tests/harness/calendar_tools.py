"""The example calendar tools in a Home Assistant config folder, on an empty vdir."""

from datetime import datetime
import json
from pathlib import Path
import shutil
from zoneinfo import ZoneInfo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tools"
ZONE = "Europe/Rome"
# A day in the future whenever the tests run.
DAY = f"{datetime.now(ZoneInfo(ZONE)).year + 2}-06-12"


def install_calendar_tools(folder: Path, vdir: Path) -> dict[str, str]:
    """Put the helpers and config.toml into `folder`; return the tool files.

    The vdir gets two empty calendars, `personal` (the first) and `work`.
    """
    for calendar in ("personal", "work"):
        (vdir / calendar).mkdir(parents=True, exist_ok=True)
    (folder / "tools").mkdir(parents=True, exist_ok=True)
    for helper in ("calendar.py", "calendar_add.py", "helperlib.py"):
        shutil.copy2(EXAMPLES / helper, folder / "tools" / helper)
    env = {"CALENDAR_DIR": str(vdir), "TZ": ZONE}
    (folder / "config.toml").write_text(
        "[env]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in env.items())
    )
    return {
        name: (EXAMPLES / f"{name}.toml").read_text()
        for name in ("calendar", "calendar_add")
    }


def events(vdir: Path) -> list[Path]:
    """Every event file in the vdir, temporary ones included."""
    return sorted(path for path in vdir.rglob("*") if path.is_file())
