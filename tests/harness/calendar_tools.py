"""The example calendar tools in a Home Assistant config folder, on an empty vdir."""

from collections.abc import Awaitable, Callable
from datetime import date, datetime, tzinfo
import json
from pathlib import Path
import shutil
from zoneinfo import ZoneInfo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tools"
ZONE = "Europe/Rome"
# A day in the future whenever the tests run.
DAY = f"{datetime.now(ZoneInfo(ZONE)).year + 2}-06-12"


async def on_one_day[T](
    zone: tzinfo, attempt: Callable[[date], Awaitable[T]]
) -> tuple[date, T]:
    """Run `attempt` with today's date in `zone`; again if midnight passed meanwhile.

    The example tools read the real clock in their own process (they take no
    fixed "now"), so "today" is only the test's when no midnight falls between
    the two reads. Two tries a second apart cannot both straddle one.
    """
    for _ in range(2):
        today = datetime.now(zone).date()
        outcome = await attempt(today)
        if datetime.now(zone).date() == today:
            return today, outcome
    raise AssertionError("the date changed during both tries")


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
