"""The add-on repository: repository.yaml, each add-on's files, against the
community add-on linter's schemas and rules, and the options they take."""

import json
from pathlib import Path
import re
import subprocess
import sys

from jsonschema import Draft7Validator, ValidationError, validators
import pytest
import yaml

from wyoming_services.config import load_config

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = Path(__file__).parent / "schemas"
ADDONS = {"wyoming-kokoro": 10200, "wyoming-whisper-relay": 10300}
LANGUAGES = ("en", "it", "nl", "de", "fr", "es")
# Add-ons that must reach the LAN: the relay's Wake-on-LAN packet is a broadcast.
HOST_NETWORK = {"wyoming-whisper-relay"}


def default_checking(validator_class):
    """The linter's extra rule: a key set to its schema default is an error."""
    check_properties = validator_class.VALIDATORS["properties"]

    def properties(validator, properties, instance, schema):
        for name, subschema in properties.items():
            if "default" in subschema and instance.get(name) == subschema["default"]:
                yield ValidationError(f"'{name}' should be removed, it is the default")
        yield from check_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": properties})


def lint(name: str, data: dict) -> list[str]:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    validator = default_checking(Draft7Validator)(schema)
    return sorted(error.message for error in validator.iter_errors(data))


def read_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


@pytest.fixture(params=sorted(ADDONS))
def addon(request: pytest.FixtureRequest) -> Path:
    return ROOT / "addons" / request.param


def test_repository_yaml_names_the_repository() -> None:
    repository = read_yaml(ROOT / "repository.yaml")
    assert set(repository) == {"name", "url", "maintainer"}
    assert repository["url"].startswith("https://github.com/")


def test_config_and_build_pass_the_linter(addon: Path) -> None:
    config = read_yaml(addon / "config.yaml")
    build = read_yaml(addon / "build.yaml")
    assert lint("config", config) == []
    assert lint("build", build) == []
    # The linter's further rules: supported architectures, the same in both.
    assert set(config["arch"]) == set(build["build_from"]) == {"amd64", "aarch64"}
    assert config["init"] is False  # s6-overlay is the init
    assert "image" not in config  # built by the Supervisor from the Dockerfile


def test_the_schema_check_can_fail() -> None:
    """A broken config.yaml is caught: the linter's schema is really applied."""
    assert lint("config", {"name": "x", "version": "1", "slug": "x"}) == [
        "'arch' is a required property",
        "'description' is a required property",
    ]
    assert lint("config", {"init": True, "arch": ["i386"]})[0] == (
        "'description' is a required property"
    )
    assert "'init' should be removed, it is the default" in lint(
        "config", {"init": True}
    )


def test_discovery_and_port_match_the_image(addon: Path) -> None:
    config = read_yaml(addon / "config.yaml")
    port = ADDONS[addon.name]
    assert config["discovery"] == ["wyoming"]
    if addon.name in HOST_NETWORK:
        # On the host network a port mapping means nothing: the service has
        # the host's port itself.
        assert config["host_network"] is True
        assert "ports" not in config
    else:
        assert "host_network" not in config
        assert config["ports"] == {f"{port}/tcp": None}
    dockerfile = (addon / "Dockerfile").read_text()
    assert dockerfile.startswith("ARG BUILD_FROM\nFROM ${BUILD_FROM}\n")
    assert f"ENV WYOMING_PORT={port}\n" in dockerfile
    assert f'"tcp://127.0.0.1:{port}"' in dockerfile  # the health check


def test_every_option_is_in_the_schema_translated_and_documented(addon: Path) -> None:
    config = read_yaml(addon / "config.yaml")
    assert set(config["options"]) == set(config["schema"])
    docs = (addon / "DOCS.md").read_text()
    for language in LANGUAGES:
        translation = read_yaml(addon / "translations" / f"{language}.yaml")
        assert set(translation["configuration"]) == set(config["schema"]), language
        for option in translation["configuration"].values():
            assert option["name"] and option["description"], language
        assert set(translation.get("network", {})) == set(config.get("ports", {}))
    for option in config["schema"]:
        assert f"### Option: `{option}`" in docs
    if addon.name in HOST_NETWORK:
        assert "runs on the host network" in docs


def test_s6_services_are_executable_scripts(addon: Path) -> None:
    services = addon / "rootfs/etc/s6-overlay/s6-rc.d"
    names = {path.name for path in (services / "user/contents.d").iterdir()}
    assert "discovery" in names and len(names) == 2
    for name in names:
        kind = (services / name / "type").read_text().strip()
        script = services / name / "run"
        assert kind in ("longrun", "oneshot")
        assert script.read_text().startswith("#!/command/with-contenv bashio\n")
        assert script.stat().st_mode & 0o111
    discovery = services / "discovery"
    assert (discovery / "up").read_text().strip() == str(
        Path("/") / discovery.relative_to(addon / "rootfs") / "run"
    )
    (service,) = names - {"discovery"}
    assert [path.name for path in (discovery / "dependencies.d").iterdir()] == [service]


def options_to_toml(service: str, options: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wyoming_services.addon", "config", service],
        input=json.dumps(options),
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("addon_name", "service"),
    [
        ("wyoming-kokoro", "kokoro"),
        ("wyoming-whisper-relay", "whisper"),
    ],
)
def test_default_options_make_a_valid_config(
    addon_name: str, service: str, tmp_path: Path
) -> None:
    options = read_yaml(ROOT / "addons" / addon_name / "config.yaml")["options"]
    result = options_to_toml(service, options)
    assert result.returncode == 0, result.stderr
    (tmp_path / "c.toml").write_text(result.stdout)
    config = load_config(tmp_path / "c.toml")
    if service == "kokoro":
        assert str(config.kokoro.model) == "/share/kokoro/kokoro-v1.0.onnx"
        assert [(v.name, v.lang, v.blend) for v in config.voices] == [
            ("en", "en-us", {"af_heart": 1.0})
        ]
    else:
        assert config.whisper.urls == ("http://192.168.1.10:8182",)
        assert config.whisper.wake_mac == ""


def test_kokoro_blends_become_voice_tables(tmp_path: Path) -> None:
    result = options_to_toml(
        "kokoro",
        {
            "model": "/share/kokoro/m.onnx",
            "voices_file": "/share/kokoro/v.bin",
            "speed": 1.1,
            "voices": [
                {"name": "it", "lang": "it", "blend": "if_sara=0.8, af_bella = 0.2"},
                {"name": "en", "blend": "af_heart=1"},
            ],
        },
    )
    assert result.returncode == 0, result.stderr
    (tmp_path / "c.toml").write_text(result.stdout)
    config = load_config(tmp_path / "c.toml")
    assert config.kokoro.speed == 1.1
    assert [(v.name, v.lang, v.blend) for v in config.voices] == [
        ("it", "it", {"if_sara": 0.8, "af_bella": 0.2}),
        ("en", None, {"af_heart": 1.0}),
    ]


@pytest.mark.parametrize(
    ("service", "options", "message"),
    [
        # TOML (or shell) smuggled in an option stays a string or is refused.
        (
            "kokoro",
            {"voices": [{"name": "x", "blend": "a=1 }\n[kokoro]\nmodel = '/etc'"}]},
            "voice x: blend must be style=weight",
        ),
        ("kokoro", {"voices": [{"name": "x]\n[kokoro", "blend": "a=1"}]}, "voice name"),
        ("kokoro", {"voices": [{"name": "auto", "blend": "a=1"}]}, "is reserved"),
        ("kokoro", {"voices": [{"blend": "a=1"}]}, "each voice needs a name"),
        ("kokoro", {"speed": 9}, "kokoro.speed must be between 0.5 and 2.0"),
        ("kokoro", {"model": True}, "model must be a string, a number or a list"),
        (
            "whisper",
            {"urls": ["http://a:1"], "transcribe_at_pause": "yes"},
            "transcribe_at_pause must be true or false",
        ),
        ("whisper", {"urls": []}, "set at least one whisper-server URL"),
        (
            "whisper",
            {"urls": ['http://a"\n[kokoro]']},
            "urls holds the control character U+000A",
        ),
        ("whisper", {"urls": ["$(reboot)"]}, "must be an http:// or https:// URL"),
        # A URL's credentials stay out of the error.
        (
            "whisper",
            {"urls": ["ftp://admin:hunter2@nas/x"]},
            "whisper URL 'ftp://nas/x' must be an http:// or https:// URL",
        ),
        # What JSON carries and TOML or UTF-8 cannot: named, not a traceback.
        (
            "whisper",
            {"urls": ["http://a:1"], "language": "\ud800"},
            "language holds U+D800, half of a character (a lone surrogate)",
        ),
        ("kokoro", {"model": "m\udfff"}, "model holds U+DFFF, half of a character"),
        (
            "whisper",
            {"urls": ["http://a:1"], "wake_address": "1.2.3.4\x7f"},
            "wake_address holds the control character U+007F",
        ),
        ("whisper", {"urls": ["http://a:1\x7f"]}, "urls holds the control character"),
        (
            "kokoro",
            {"voices": [{"name": "en", "lang": "e\x7fn", "blend": "a=1"}]},
            "voice en: lang holds the control character U+007F",
        ),
        ("whisper", {"urls": ["http://a:1"], "wake_mac": "zz"}, "wake_mac must be"),
        ("whisper", {"urls": ["http://a:1"], "language": "xx"}, None),
    ],
)
def test_bad_options_are_one_clear_line(
    service: str, options: dict, message: str | None
) -> None:
    result = options_to_toml(service, options)
    if message is None:  # the language is checked by the server at start
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert message in line
    assert "hunter2" not in line


def test_options_that_are_not_json_are_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "wyoming_services.addon", "config", "whisper"],
        input="{not json",
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 1
    assert re.match(r"error: the options are not JSON: ", result.stderr)
