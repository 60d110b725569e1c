"""scripts/develop keeps its household on the machine, and a URL's password out of logs.

Home Assistant is started by the household's own code on a free port, with
a llama-server URL that carries a password and where nothing listens, so
that the entry cannot be added; its listening sockets are read from /proc,
and nothing is sent to any address but 127.0.0.1.
"""

import contextlib
import json
from pathlib import Path
import time

import pytest

from tests.harness.household import (
    Household,
    HouseholdPlan,
    first_screen,
    start_home_assistant,
    write_configuration,
)
from tests.harness.ports import free_port

PASSWORD = "s3cret-Pa55"
# Far above what Home Assistant takes to start on a busy 2-core machine.
START_WITHIN = 300


def listening_addresses(pid: int) -> list[str]:
    """The addresses process `pid` listens on over TCP (IPv4 and IPv6), as hex."""
    sockets = set()
    for path in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # that file was just closed
            sockets.add(path.readlink().name)
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and f"socket:[{fields[9]}]" in sockets:  # LISTEN
                found.append(fields[1].rsplit(":", 1)[0])
    return found


def loopback(address: str) -> bool:
    """127.0.0.1 (little-endian hex in /proc) or ::1."""
    return address in ("0100007F", "00000000000000000000000001000000")


def wait_for_log(household: Household, text: str) -> str:
    log = household.plan.dev / "logs" / "home-assistant.log"
    deadline = time.monotonic() + START_WITHIN
    while text not in (logged := log.read_text(errors="replace")):
        assert time.monotonic() < deadline, logged[-3000:]
        time.sleep(0.5)
    return logged


@pytest.mark.timeout(600)
def test_home_assistant_stays_on_loopback_and_its_log_holds_no_password(
    tmp_path: Path, socket_enabled: None
) -> None:
    """scripts/develop --no-voice --llm-url with a password, nothing at that URL."""
    plan = HouseholdPlan(dev=tmp_path, hass_port=free_port())
    household = Household(plan)
    llm_url = f"http://assistant:{PASSWORD}@127.0.0.1:{free_port()}/v1"
    try:
        config = write_configuration(plan, llm_url, voice=False)
        start_home_assistant(household, config, [], to_terminal=False)
        household.wait_until_ready("home-assistant", plan.hass_port, "/api/onboarding")
        ((_, hass),) = household.processes
        addresses = listening_addresses(hass.pid)
        assert addresses, "Home Assistant listens nowhere"
        assert all(loopback(address) for address in addresses), addresses
        logged = wait_for_log(household, "was not added")
    finally:
        household.stop()
    assert "llama-server at http://127.0.0.1:" in logged
    assert PASSWORD not in logged
    screen = first_screen(plan, llm_url, f"http://u:{PASSWORD}@127.0.0.1:1")
    assert PASSWORD not in screen
    assert "on this machine only" in screen


def test_lan_listens_everywhere_and_says_so(tmp_path: Path) -> None:
    """--lan: no host in Home Assistant's stored settings, and a warning."""
    plan = HouseholdPlan(dev=tmp_path, hass_port=8123)
    config = write_configuration(plan, "http://127.0.0.1:1/v1", voice=False, lan=True)
    stored = json.loads((config / ".storage" / "http").read_text())["data"]
    assert "server_host" not in stored["stable"]
    assert stored["stable"]["server_port"] == 8123
    screen = first_screen(plan, "http://127.0.0.1:1/v1", None, lan=True)
    assert "on every interface (--lan)" in screen
    assert "any device of your network can open Home Assistant" in screen
    config = write_configuration(plan, "http://127.0.0.1:1/v1", voice=False)
    stored = json.loads((config / ".storage" / "http").read_text())["data"]
    assert stored["stable"]["server_host"] == ["127.0.0.1"]
    assert stored["pending"] is None
