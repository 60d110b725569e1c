"""Read ESPHome configs with ESPHome's own code (run by the ESPHome venv's Python).

ESPHome cannot be imported into Home Assistant's environment (their pins
clash), so the tests run this file as a script there:

    python esphome_yaml.py voice-pe FILE        problems in a Voice PE config
    python esphome_yaml.py model-sources FILE   how each wake word model is fetched

`voice-pe` prints one problem a line and exits 1 when there is any. The
ids and select options it accepts from the official firmware are those of
the release voice-pe.yaml pins (home-assistant-voice.yaml).
"""

from collections.abc import Iterator
import json
import logging
from pathlib import Path
import re
import sys
from typing import Any

from esphome.components import micro_wake_word, packages, substitutions
from esphome.config_helpers import Extend
import esphome.config_validation as cv
from esphome.core import CORE, EsphomeError
from esphome.yaml_util import load_yaml

OFFICIAL_REPOSITORY = "https://github.com/esphome/home-assistant-voice-pe.git"
OFFICIAL_FILE = "home-assistant-voice.yaml"
# Ids the official firmware declares that a household config may use.
OFFICIAL_IDS = frozenset({"okay_nabu", "hey_jarvis", "hey_mycroft", "ota_esphome"})
# The options of the firmware's "Wake word sensitivity" select.
OFFICIAL_SENSITIVITIES = frozenset(
    {"Slightly sensitive", "Moderately sensitive", "Very sensitive"}
)
# A release tag (26.6.0) or a commit; a branch (main, dev) moves under you.
PINNED_REF = re.compile(r"\d+\.\d+\.\d+|[0-9a-f]{40}")
LAMBDA_ID = re.compile(r"\bid\((\w+)\)")
SET_OPTION = re.compile(r'set_option\("([^"]*)"\)')
# Actions whose plain value is text, not an id.
TEXT_ACTIONS = frozenset({"logger.log"})
MODEL_SUBSTITUTIONS = ("wake_word_model", "stop_word_model", "vad_model")


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def _ids(node: Any, in_action: bool = False) -> Iterator[tuple[str, str]]:
    """Yield ("declared" | "used", id) for every id in the config tree."""
    if isinstance(node, list):
        for item in node:
            yield from _ids(item, in_action)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        is_action = isinstance(key, str) and "." in key
        if isinstance(value, Extend):
            yield "used", str(value.value)
        elif key == "id" and isinstance(value, str):
            yield ("used" if in_action else "declared"), value
        elif is_action and isinstance(value, str) and key not in TEXT_ACTIONS:
            yield "used", value
        else:
            yield from _ids(value, is_action)


def _remote_packages(config: dict[str, Any]) -> list[dict[str, Any]]:
    declared = config.get("packages", {})
    sources = declared.values() if isinstance(declared, dict) else declared
    remote = []
    for source in sources:
        if isinstance(source, str):
            remote.append(packages.validate_source_shorthand(source))
        elif isinstance(source, dict) and packages.is_remote_package(source):
            remote.append(packages.REMOTE_PACKAGE_SCHEMA(source))
    return remote


def _package_problems(config: dict[str, Any]) -> list[str]:
    official = [
        package
        for package in _remote_packages(config)
        if package["url"] == OFFICIAL_REPOSITORY
        and OFFICIAL_FILE in [str(file) for file in package["files"]]
    ]
    if len(official) != 1:
        return [f"expected one package of {OFFICIAL_FILE} from {OFFICIAL_REPOSITORY}"]
    ref = official[0].get("ref")
    if ref is None or not PINNED_REF.fullmatch(str(ref)):
        return [f"the official package is not pinned to a release: ref {ref!r}"]
    return []


class _UnresolvedSubstitutions(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        first_line = record.getMessage().splitlines()[0]
        if "could not resolve" in first_line:
            self.messages.append(first_line.rpartition("variables: ")[2])


def _substitute(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Apply the substitutions as ESPHome does; return what it could not resolve."""
    unresolved = _UnresolvedSubstitutions()
    logger = logging.getLogger(substitutions.__name__)
    logger.addHandler(unresolved)
    try:
        substituted = substitutions.do_substitution_pass(config)
    finally:
        logger.removeHandler(unresolved)
    messages = dict.fromkeys(unresolved.messages)  # ESPHome may warn twice
    return substituted, [f"undefined substitution: {m}" for m in messages]


def voice_pe_problems(path: Path) -> list[str]:
    """Return what is wrong with a Voice PE config built on the official firmware."""
    config = load_yaml(path)
    problems = _package_problems(config)
    config, unresolved = _substitute(config)
    problems += unresolved
    # Package names and substitution values are not ids.
    body = {k: v for k, v in config.items() if k not in ("packages", "substitutions")}
    found = list(_ids(body))
    for text in _strings(body):
        found += [("used", name) for name in LAMBDA_ID.findall(text)]
        problems += [
            f"not a sensitivity the firmware offers: {option!r}"
            for option in SET_OPTION.findall(text)
            if option not in OFFICIAL_SENSITIVITIES
        ]
    declared = {name for kind, name in found if kind == "declared"}
    used = {name for kind, name in found if kind == "used"}
    problems += [
        f"unknown id: {name}" for name in sorted(used - declared - OFFICIAL_IDS)
    ]
    return problems


def model_sources(path: Path) -> dict[str, str]:
    """Map each model substitution to where ESPHome would get it (http, git, local)."""
    CORE.config_path = path
    values = load_yaml(path)["substitutions"]
    return {
        name: micro_wake_word.MODEL_SOURCE_SCHEMA(values[name])["type"]
        for name in MODEL_SUBSTITUTIONS
    }


def main() -> int:
    """Run the command named on the command line."""
    command, file = sys.argv[1], Path(sys.argv[2])
    try:
        if command == "model-sources":
            print(json.dumps(model_sources(file)))
            return 0
        problems = voice_pe_problems(file)
    except (cv.Invalid, EsphomeError) as error:
        print(f"{file.name}: {error}")
        return 1
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
