"""The ESPHome configs, checked by ESPHome itself without the network.

ESPHome lives in an environment of its own (scripts/setup builds it), so each
check runs it as a subprocess: `esphome config` for the satellite, and
esphome_yaml.py (ESPHome's YAML loader and substitutions) for the Voice PE
file, whose firmware is a remote package that cannot be fetched here.
"""

import base64
import json
import os
from pathlib import Path
import secrets
import shutil
import subprocess

import pytest
import yaml

ROOT = Path(__file__).parents[2]
ESPHOME_DIR = ROOT / "esphome"
HELPER = Path(__file__).with_name("esphome_yaml.py")
# Where scripts/setup puts ESPHome's environment: inside the sid userland, or
# next to the repository when a host python3.14 is used.
ESPHOME_PYTHONS = (Path("/opt/esphome/bin/python"), ROOT / ".venv-esphome/bin/python")
# Any download would go through this proxy, where nothing listens: a config
# that needs the network fails instead of quietly fetching.
OFFLINE = {
    key: "http://127.0.0.1:9"
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
} | {"NO_PROXY": "", "no_proxy": "", "GIT_TERMINAL_PROMPT": "0"}
MODEL_SUBSTITUTIONS = {
    "wake_word_model": "okay_nabu",
    "stop_word_model": "stop",
    "vad_model": "vad",
}


@pytest.fixture(scope="module")
def esphome_python() -> Path:
    for python in ESPHOME_PYTHONS:
        if python.is_file():
            return python
    pytest.fail("ESPHome's environment is missing: run scripts/setup")


def run(command: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env=os.environ | OFFLINE,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class _TaggedLoader(yaml.SafeLoader):
    """Reads ESPHome's printed config, whose !lambda and !secret tags mark plain values."""


_TaggedLoader.add_multi_constructor(
    "!", lambda loader, _suffix, node: loader.construct_scalar(node)
)


def validated_config(printed: str) -> dict:
    """Parse the config `esphome config` printed (its log lines aside)."""
    lines = [
        line
        for line in printed.splitlines()
        if not line.startswith(("INFO ", "WARNING "))
    ]
    return yaml.load("\n".join(lines), Loader=_TaggedLoader)


def write_secrets(folder: Path) -> None:
    """Write secrets.yaml from the example, with a real API key."""
    values = yaml.safe_load((ESPHOME_DIR / "secrets.yaml.example").read_text())
    values["api_encryption_key"] = base64.b64encode(secrets.token_bytes(32)).decode()
    (folder / "secrets.yaml").write_text(yaml.safe_dump(values))


def write_model(folder: Path, name: str) -> Path:
    """Write a microWakeWord manifest (v2) and a stand-in for its TFLite model."""
    manifest = {
        "type": "micro",
        "wake_word": name.replace("_", " "),
        "author": "tests",
        "website": "https://example.org/",
        "model": f"{name}.tflite",
        "trained_languages": ["en"],
        "version": 2,
        "micro": {
            "probability_cutoff": 0.97,
            "feature_step_size": 10,
            "sliding_window_size": 5,
            "tensor_arena_size": 22860,
            "minimum_esphome_version": "2024.7.0",
        },
    }
    (folder / f"{name}.tflite").write_bytes(b"TFL3" + bytes(60))
    path = folder / f"{name}.json"
    path.write_text(json.dumps(manifest))
    return path


def test_satellite_config_is_valid_offline(
    esphome_python: Path, tmp_path: Path
) -> None:
    for item in ("satellite-s3.yaml", "common", "sounds"):
        source = ESPHOME_DIR / item
        if source.is_dir():
            shutil.copytree(source, tmp_path / item)
        else:
            shutil.copy(source, tmp_path / item)
    write_secrets(tmp_path)
    overrides: list[str | Path] = []
    for substitution, name in MODEL_SUBSTITUTIONS.items():
        overrides += ["-s", substitution, write_model(tmp_path, name)]

    result = run(
        [esphome_python, "-m", "esphome", *overrides, "config", "satellite-s3.yaml"],
        tmp_path,
    )

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Configuration is valid!" in output
    assert "WARNING" not in output, output
    config = validated_config(result.stdout)
    models = config["micro_wake_word"]["models"]
    assert [model["model"]["path"] for model in models] == [
        str(tmp_path / "okay_nabu.json"),
        str(tmp_path / "stop.json"),
    ]
    # The wake word is offered to Home Assistant; the stop word only listens
    # while a timer rings or a reply plays.
    assert [model["internal"] for model in models] == [False, True]
    assistant = config["voice_assistant"]
    assert assistant["micro_wake_word"] == config["micro_wake_word"]["id"]
    (player,) = config["media_player"]
    assert player["platform"] == "speaker"
    assert assistant["media_player"] == player["id"]
    assert "on_timer_finished" in assistant
    assert "on_error" in assistant
    assert [light["platform"] for light in config["light"]] == ["esp32_rmt_led_strip"]


def test_satellite_ships_published_wake_word_models(esphome_python: Path) -> None:
    """The models the offline check replaces are, as shipped, ones ESPHome downloads."""
    result = run(
        [esphome_python, HELPER, "model-sources", ESPHOME_DIR / "satellite-s3.yaml"],
        ROOT,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == dict.fromkeys(MODEL_SUBSTITUTIONS, "http")


@pytest.fixture
def voice_pe_folder(tmp_path: Path) -> Path:
    write_secrets(tmp_path)
    return tmp_path


def check_voice_pe(python: Path, folder: Path, text: str) -> list[str]:
    (folder / "voice-pe.yaml").write_text(text)
    result = run([python, HELPER, "voice-pe", folder / "voice-pe.yaml"], folder)
    problems = result.stdout.splitlines()
    assert result.returncode == (1 if problems else 0), result.stderr
    return problems


def test_voice_pe_config_is_consistent(
    esphome_python: Path, voice_pe_folder: Path
) -> None:
    text = (ESPHOME_DIR / "voice-pe.yaml").read_text()

    assert check_voice_pe(esphome_python, voice_pe_folder, text) == []


def changed(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} is not in voice-pe.yaml once"
    return text.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            "home-assistant-voice.yaml@26.6.0",
            "home-assistant-voice.yaml@dev",
            "the official package is not pinned to a release: ref 'dev'",
        ),
        (
            "home-assistant-voice.yaml@26.6.0",
            "home-assistant-voice.yaml",
            "the official package is not pinned to a release: ref None",
        ),
        (
            "  name: ${name}\n",
            "  name: ${room}-${name}\n",
            "undefined substitution: 'room' is undefined",
        ),
        ("wake_word: okay_nabu", "wake_word: hey_siri", "unknown id: hey_siri"),
        (
            "wake_word_sensitivity: Moderately sensitive",
            "wake_word_sensitivity: Extremely sensitive",
            "not a sensitivity the firmware offers: 'Extremely sensitive'",
        ),
        (
            "  - id: household_voice_defaults\n",
            "  - id: voice_defaults\n",
            "unknown id: household_voice_defaults",
        ),
    ],
    ids=["branch", "unpinned", "substitution", "wake-word", "sensitivity", "id"],
)
def test_voice_pe_check_finds_breakage(
    esphome_python: Path, voice_pe_folder: Path, old: str, new: str, problem: str
) -> None:
    text = changed((ESPHOME_DIR / "voice-pe.yaml").read_text(), old, new)

    assert problem in check_voice_pe(esphome_python, voice_pe_folder, text)
