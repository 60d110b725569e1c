"""`pip install .` in a fresh venv: the console scripts, old name and new."""

import os
from pathlib import Path
import re
import subprocess
import sys
import sysconfig
import tomllib

import pytest

from tests.harness.package import copy_package_source

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the package installed from a copy of the source, offline.

    The venv sees the env's site-packages (setuptools to build with, the
    dependencies to run with) through a .pth line: the build needs no index.
    """
    folder = tmp_path_factory.mktemp("install")
    source = copy_package_source(folder / "source")
    venv = folder / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run(
        [base, "-m", "venv", "--system-site-packages", str(venv)], check=True
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "env-packages.pth").write_text(sysconfig.get_paths()["purelib"])
    result = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            str(source),
        ],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert result.returncode == 0, result.stderr
    return venv


def run_script(venv: Path, name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [venv / "bin" / name, *args],
        check=False,
        input="",  # stdio:// stops at end of input
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_new_name_runs_the_server_without_a_deprecation(installed: Path) -> None:
    result = run_script(installed, "wyoming-whisper-relay", "--uri", "stdio://")
    assert result.returncode == 0, result.stderr
    assert "serving on stdio" in result.stderr
    assert "deprecated" not in result.stderr


def test_old_name_still_works_and_says_it_is_deprecated(installed: Path) -> None:
    result = run_script(installed, "wyoming-whisper-cpp", "--uri", "stdio://")
    assert result.returncode == 0, result.stderr
    assert "serving on stdio" in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert "wyoming-whisper-cpp is deprecated" in line
    assert "run wyoming-whisper-relay instead" in line


def test_kokoro_script_is_installed(installed: Path) -> None:
    result = run_script(installed, "wyoming-kokoro", "--help")
    assert result.returncode == 0, result.stderr
    assert "--zeroconf" in result.stdout


def test_scripts_run_the_installed_copy(installed: Path) -> None:
    """Not the editable checkout the shared env may carry."""
    result = subprocess.run(
        [
            installed / "bin" / "python",
            "-c",
            "import wyoming_services; print(wyoming_services.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=installed,
    )
    assert Path(result.stdout.strip()).is_relative_to(installed)


def test_units_and_add_on_start_the_new_name() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    units = ROOT / "wyoming_services" / "systemd"
    assert not (units / "wyoming-whisper-cpp.service").exists()
    unit = (units / "wyoming-whisper-relay.service").read_text()
    (exec_start,) = re.findall(r"^ExecStart=(\S+)", unit, re.MULTILINE)
    assert exec_start.endswith("/venv/bin/wyoming-whisper-relay")
    assert scripts["wyoming-whisper-relay"] == "wyoming_services.whisper.__main__:main"
    run = (
        ROOT / "addons/wyoming-whisper-relay/rootfs/etc/s6-overlay/s6-rc.d/whisper/run"
    )
    assert "exec wyoming-whisper-relay --uri" in run.read_text()
    # The old name only where it is kept working.
    for path in (*units.iterdir(), *(ROOT / "addons").rglob("*")):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert "wyoming-whisper-cpp" not in text.replace(
                "replaces wyoming-whisper-cpp.service", ""
            ), path


def test_the_installed_relay_wakes_with_the_integrations_file(installed: Path) -> None:
    result = subprocess.run(
        [
            installed / "bin" / "python",
            "-c",
            "import desktop_assistant_wake_on_lan as w; print(w.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=installed,
    )
    shipped = Path(result.stdout.strip())
    assert shipped.is_relative_to(installed)
    waker = ROOT / "custom_components" / "desktop_assistant" / "wake_on_lan"
    assert shipped.read_bytes() == (waker / "__init__.py").read_bytes()
