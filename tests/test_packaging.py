"""The manifest, hacs.json, strings and brand follow hassfest's and HACS's rules.

hassfest and HACS's validator run as container actions, so their rules for
what this repository ships are checked here.
"""

import json
from pathlib import Path
import re
import struct

from awesomeversion import AwesomeVersion
from homeassistant.const import __version__ as ha_version
import yaml

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "custom_components" / "desktop_assistant"
HACS_KEYS = {
    "name",
    "content_in_root",
    "zip_release",
    "filename",
    "hide_default_branch",
    "country",
    "homeassistant",
    "hacs",
    "persistent_directory",
}
REFERENCE = re.compile(r"\[%key:([a-z0-9_:]+)%\]")


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def leaves(node: dict, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    found = {}
    for key, value in node.items():
        if isinstance(value, dict):
            found |= leaves(value, (*path, key))
        else:
            found[(*path, key)] = value
    return found


def test_manifest() -> None:
    manifest = load(INTEGRATION / "manifest.json")
    keys = list(manifest)
    assert keys[:2] == ["domain", "name"]
    assert keys[2:] == sorted(keys[2:])
    assert manifest["domain"] == INTEGRATION.name
    required = {
        "version",
        "documentation",
        "issue_tracker",
        "codeowners",
        "config_flow",
        "dependencies",
        "after_dependencies",
        "integration_type",
        "iot_class",
        "requirements",
    }
    assert required <= set(manifest)
    assert AwesomeVersion(manifest["version"]).valid
    assert manifest["config_flow"] is True
    assert "conversation" in manifest["dependencies"]
    assert manifest["integration_type"] == "service"
    assert manifest["iot_class"] == "local_polling"
    assert all(owner.startswith("@") for owner in manifest["codeowners"])
    assert manifest["documentation"].startswith("https://")
    assert manifest["issue_tracker"].startswith("https://")
    assert all("==" in requirement for requirement in manifest["requirements"])


def test_hacs_json() -> None:
    hacs = load(ROOT / "hacs.json")
    assert set(hacs) <= HACS_KEYS
    assert hacs["name"]
    assert AwesomeVersion(hacs["homeassistant"]) >= "2026.10.0"
    # The tests run on the oldest Home Assistant hacs.json admits.
    assert AwesomeVersion(ha_version).section(1) == AwesomeVersion(
        hacs["homeassistant"]
    ).section(1)


def test_english_translation_is_strings_resolved() -> None:
    strings = leaves(load(INTEGRATION / "strings.json"))
    english = leaves(load(INTEGRATION / "translations" / "en.json"))
    assert english.keys() == strings.keys()
    for key, text in english.items():
        assert text and "[%key:" not in text, key
        if not REFERENCE.search(strings[key]):
            assert text == strings[key], key
        # Placeholders survive translation; hassfest refuses URLs in strings.
        assert set(re.findall(r"{\w+}", strings[key])) <= set(
            re.findall(r"{\w+}", text)
        ), key
        assert "://" not in strings[key], key


def test_references_point_at_existing_strings() -> None:
    strings = load(INTEGRATION / "strings.json")
    for key, text in leaves(strings).items():
        for reference in REFERENCE.findall(text):
            parts = reference.split("::")
            if parts[0] == "common":
                continue
            assert parts[:2] == ["component", INTEGRATION.name], key
            node = strings
            for part in parts[2:]:
                node = node[part]
            assert isinstance(node, str), key


def test_brand_icon_is_a_square_png() -> None:
    data = (INTEGRATION / "brand" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == height == 256


def test_workflows_run_the_validators_and_the_readmes_commands() -> None:
    steps = [
        step
        for path in sorted((ROOT / ".github" / "workflows").glob("*.yaml"))
        for job in yaml.safe_load(path.read_text())["jobs"].values()
        for step in job["steps"]
    ]
    actions = {step["uses"].split("@")[0]: step for step in steps if "uses" in step}
    assert "home-assistant/actions/hassfest" in actions
    assert actions["hacs/action"]["with"]["category"] == "integration"
    # The test job runs what the README tells a person to run.
    commands = [step["run"] for step in steps if "run" in step]
    assert commands == ["scripts/setup", "scripts/test"]
    readme = (ROOT / "README.md").read_text()
    for command in commands:
        assert re.search(rf"^{command} ", readme, re.MULTILINE), command


def test_every_action_has_an_icon() -> None:
    icons = load(INTEGRATION / "icons.json")
    actions = re.findall(
        r"^(\w+):", (INTEGRATION / "services.yaml").read_text(), re.MULTILINE
    )
    assert set(icons["services"]) == set(actions)
    assert all(
        entry["service"].startswith("mdi:") for entry in icons["services"].values()
    )
