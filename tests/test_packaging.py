"""The manifest, hacs.json, strings and brand follow hassfest's and HACS's rules.

hassfest and HACS's validator run as container actions, so their rules for
what this repository ships are checked here.
"""

from importlib.metadata import requires
import json
from pathlib import Path
import re
import shutil
import struct
import subprocess
import sys
import zipfile

from awesomeversion import AwesomeVersion
from homeassistant.const import __version__ as ha_version
import pytest
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
    # The harness pins the oldest Home Assistant hacs.json admits; the tests
    # run on it, or on the newest that requirements_newest.txt names.
    (pin,) = [
        requirement
        for requirement in requires("pytest-homeassistant-custom-component") or []
        if requirement.startswith("homeassistant==")
    ]
    oldest = pin.removeprefix("homeassistant==")
    assert AwesomeVersion(oldest).section(1) == AwesomeVersion(
        hacs["homeassistant"]
    ).section(1)
    newest = re.search(
        r"^homeassistant==(\S+)$",
        (ROOT / "requirements_newest.txt").read_text(),
        re.MULTILINE,
    )
    assert newest
    assert AwesomeVersion(newest[1]) > AwesomeVersion(oldest)
    assert ha_version in (oldest, newest[1])


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
    assert commands == [
        "scripts/setup",
        "scripts/test -n auto --dist loadfile",
        "scripts/test --ha newest -n auto --dist loadfile",
    ]
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


def run_package(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Run `root`'s scripts/package, as the release workflow does."""
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "package"), *arguments],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def release_steps() -> list[dict]:
    workflow = yaml.safe_load(
        (ROOT / ".github" / "workflows" / "release.yml").read_text()
    )
    # YAML 1.1 reads the key `on` as true.
    assert workflow[True] == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "write"}
    (job,) = workflow["jobs"].values()
    return job["steps"]


def test_release_workflow_hacs_and_manifest_agree() -> None:
    version = load(INTEGRATION / "manifest.json")["version"]
    hacs = load(ROOT / "hacs.json")
    steps = release_steps()

    # The version is X.Y.Z; a release is its tag, v + the version.
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    assert AwesomeVersion(version).strategy == "SemVer"
    assert hacs["zip_release"] is True
    assert re.fullmatch(r"[a-z_]+\.zip", hacs["filename"])
    (package,) = [step for step in steps if "scripts/package" in step.get("run", "")]
    assert package["run"] == 'scripts/package "$GITHUB_REF_NAME" dist'
    (release,) = [
        step for step in steps if step.get("uses", "").startswith("softprops/")
    ]
    assert release["with"]["files"] == f"dist/{hacs['filename']}"
    assert release["with"]["body_path"] == "dist/release-notes.md"
    # The add-ons (if any) follow the same version.
    for config in sorted(ROOT.glob("addons/*/config.yaml")):
        assert str(yaml.safe_load(config.read_text())["version"]) == version, config


def test_this_version_packages(tmp_path: Path) -> None:
    """The tree as it is releases: CHANGELOG.md has the manifest's version."""
    version = load(INTEGRATION / "manifest.json")["version"]

    done = run_package(ROOT, f"v{version}", str(tmp_path))

    assert done.returncode == 0, done.stderr
    filename = load(ROOT / "hacs.json")["filename"]
    with zipfile.ZipFile(tmp_path / filename) as archive:
        names = archive.namelist()
        # HACS unpacks the zip into custom_components/desktop_assistant/.
        assert json.loads(archive.read("manifest.json"))["version"] == version
    expected = sorted(
        path.relative_to(INTEGRATION).as_posix()
        for path in INTEGRATION.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    assert names == expected
    assert "translations/en.json" in names
    notes = (tmp_path / "release-notes.md").read_text()
    assert notes.strip()
    assert "## [" not in notes


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what scripts/package reads, to break."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "package", root / "scripts" / "package")
    for name in ("hacs.json", "CHANGELOG.md"):
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(
        INTEGRATION,
        root / "custom_components" / INTEGRATION.name,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    manifest = root / "custom_components" / INTEGRATION.name / "manifest.json"
    manifest.write_text(json.dumps(load(manifest) | {"version": "1.4.2"}))
    (root / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [1.4.2] - 2027-01-05\n\n- Better.\n\n"
        "## [1.4.1] - 2027-01-01\n\n- Good.\n"
    )
    return root


def write_addon(root: Path, name: str, version: str) -> None:
    folder = root / "addons" / name
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(
        f'name: {name}\nversion: "{version}"\nslug: {name}\n'
    )


def test_package_writes_the_zip_and_the_versions_notes(tree: Path) -> None:
    write_addon(tree, "kokoro", "1.4.2")
    write_addon(tree, "whisper", "1.4.2")

    done = run_package(tree, "v1.4.2", str(tree / "dist"))

    assert done.returncode == 0, done.stderr
    assert "desktop_assistant.zip" in done.stdout
    assert (tree / "dist" / "release-notes.md").read_text() == "- Better.\n"
    with zipfile.ZipFile(tree / "dist" / "desktop_assistant.zip") as archive:
        assert json.loads(archive.read("manifest.json"))["version"] == "1.4.2"


@pytest.mark.parametrize(
    ("tag", "version", "addon", "changelog", "refusal"),
    [
        ("v1.4.1", "1.4.2", None, None, "tag v1.4.1 does not match manifest.json's"),
        ("1.4.2", "1.4.2", None, None, "tag 1.4.2 does not match manifest.json's"),
        ("v1.4", "1.4", None, None, "manifest.json's version '1.4' is not X.Y.Z"),
        ("v1.4.2", "1.4.2", "1.4.1", None, "add-on kokoro has version 1.4.1"),
        ("v1.4.2", "1.4.2", None, "# Changelog\n", "CHANGELOG.md has no section"),
        ("v; rm -rf /", "1.4.2", None, None, "tag v; rm -rf / does not match"),
    ],
)
def test_package_refuses_what_disagrees(
    tree: Path,
    tag: str,
    version: str,
    addon: str | None,
    changelog: str | None,
    refusal: str,
) -> None:
    manifest = tree / "custom_components" / INTEGRATION.name / "manifest.json"
    manifest.write_text(json.dumps(load(manifest) | {"version": version}))
    if addon is not None:
        write_addon(tree, "kokoro", addon)
    if changelog is not None:
        (tree / "CHANGELOG.md").write_text(changelog)

    done = run_package(tree, tag, str(tree / "dist"))

    assert done.returncode == 1
    assert done.stderr.startswith(f"package: {refusal}"), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tree / "dist").exists()


def keys_of(tree: dict, prefix: str = "") -> set[str]:
    """Every leaf key of a nested translation, dotted."""
    found: set[str] = set()
    for key, value in tree.items():
        if isinstance(value, dict):
            found |= keys_of(value, f"{prefix}{key}.")
        else:
            found.add(prefix + key)
    return found


def test_the_panel_speaks_six_languages_with_the_same_keys() -> None:
    """The panel's text lives beside its modules, not in strings.json.

    hassfest accepts only Home Assistant's own sections in strings.json.
    """
    folder = INTEGRATION / "frontend" / "translations"
    english = keys_of(json.loads((folder / "en.json").read_text()))
    assert len(english) > 50
    for language in ("it", "nl", "de", "fr", "es"):
        other = keys_of(json.loads((folder / f"{language}.json").read_text()))
        assert other == english, language
    strings = json.loads((INTEGRATION / "strings.json").read_text())
    assert "panel" not in strings
