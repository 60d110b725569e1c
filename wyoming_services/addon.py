"""What the Home Assistant add-ons run besides the servers.

`python -m wyoming_services.addon config whisper|kokoro` reads the add-on's
options (JSON, on stdin, as `bashio::addon.options` prints them) and writes
the servers' TOML config to stdout; `python -m wyoming_services.addon wait
tcp://HOST:PORT` returns once the server there answers a Wyoming `describe`,
so that the add-on announces it to Home Assistant only when it can serve.

The TOML is made here, not in the shell: every value is written as a TOML
string or number, so nothing in an option can become a key or a table.
"""

import argparse
import asyncio
import json
import math
import re
import sys
from typing import Any
import unicodedata
from urllib.parse import urlparse

from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info

from .config import ConfigError, load_config_text

STYLE_WEIGHT_RE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*=\s*([0-9]+(?:\.[0-9]+)?)\s*$")
VOICE_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
WHISPER_OPTIONS = (
    "urls",
    "language",
    "timeout",
    "connect_timeout",
    "wake_mac",
    "wake_address",
    "wake_port",
    "wake_from",
)
# The relay's options that are on or off.
WHISPER_SWITCHES = ("transcribe_at_pause",)
OPTIONS_SOURCE = "add-on options"
WAIT_STEP = 0.5  # seconds between describe attempts
EXIT_FAILURE = 1


class OptionsError(Exception):
    """The add-on's options cannot be used; the message says why in one line."""


def whisper_toml(options: dict[str, Any]) -> str:
    """The `[whisper]` table for the add-on's options."""
    if not options.get("urls"):
        raise OptionsError("set at least one whisper-server URL (the option urls)")
    lines = ["[whisper]"]
    for key in WHISPER_OPTIONS:
        if options.get(key) not in (None, ""):
            lines.append(f"{key} = {_toml_value(options[key], key)}")
    for key in WHISPER_SWITCHES:
        if (value := options.get(key)) is not None:
            if not isinstance(value, bool):
                raise OptionsError(f"{key} must be true or false")
            lines.append(f"{key} = {'true' if value else 'false'}")
    return "\n".join(lines) + "\n"


def kokoro_toml(options: dict[str, Any]) -> str:
    """The `[kokoro]` table and one `[voice.<name>]` table per configured voice."""
    lines = ["[kokoro]"]
    for key, option in (
        ("model", "model"),
        ("voices", "voices_file"),
        ("speed", "speed"),
    ):
        if options.get(option) not in (None, ""):
            lines.append(f"{key} = {_toml_value(options[option], option)}")
    voices = options.get("voices") or []
    if not isinstance(voices, list):
        raise OptionsError("voices must be a list")
    for voice in voices:
        lines += _voice_table(voice)
    return "\n".join(lines) + "\n"


def _voice_table(voice: Any) -> list[str]:
    if not isinstance(voice, dict) or not isinstance(voice.get("name"), str):
        raise OptionsError("each voice needs a name")
    name = voice["name"]
    if not VOICE_NAME_RE.fullmatch(name):
        raise OptionsError(
            f"voice name {name!r:.40} may hold only letters, digits, _ and -"
        )
    lines = [f"[voice.{name}]"]
    if voice.get("lang"):
        lines.append(f"lang = {_toml_value(voice['lang'], f'voice {name}: lang')}")
    blend = []
    for part in str(voice.get("blend", "")).split(","):
        match = STYLE_WEIGHT_RE.match(part)
        if match is None:
            raise OptionsError(
                f"voice {name}: blend must be style=weight, ... "
                f"(like if_sara=0.8, af_bella=0.2), not {part.strip()!r:.40}"
            )
        blend.append(f"{match[1]} = {match[2]}")
    lines.append(f"blend = {{ {', '.join(blend)} }}")
    return lines


def _toml_value(value: Any, what: str) -> str:
    """A TOML literal: JSON's strings, numbers and lists of strings are TOML's."""
    if isinstance(value, bool) or not isinstance(value, str | int | float | list):
        raise OptionsError(f"{what} must be a string, a number or a list")
    if isinstance(value, list) and not all(isinstance(item, str) for item in value):
        raise OptionsError(f"{what} must be a list of strings")
    if isinstance(value, float) and not math.isfinite(value):
        raise OptionsError(f"{what} must be a number")
    for text in value if isinstance(value, list) else [value]:
        if isinstance(text, str):
            _check_text(text, what)
    return json.dumps(value, ensure_ascii=False)


def _check_text(text: str, what: str) -> None:
    """Refuse what no option means and TOML or UTF-8 cannot carry as it is.

    JSON allows a lone surrogate (half of a character) and raw control
    characters such as DEL; TOML refuses DEL, and UTF-8 cannot encode the
    surrogate, so either would fail later without naming the option.
    """
    for character in text:
        category = unicodedata.category(character)
        if category == "Cs":
            raise OptionsError(
                f"{what} holds U+{ord(character):04X}, half of a character "
                "(a lone surrogate): enter it again as plain text"
            )
        if category == "Cc":
            raise OptionsError(
                f"{what} holds the control character U+{ord(character):04X}"
            )


async def wait_for_describe(uri: str, seconds: float) -> Info:
    """Ask `uri` for its Info until it answers or `seconds` pass."""
    parsed = urlparse(uri)
    if parsed.scheme != "tcp" or not parsed.hostname or parsed.port is None:
        raise OptionsError(f"{uri} is not tcp://HOST:PORT")
    try:
        async with asyncio.timeout(seconds):
            while True:
                if (info := await _describe(parsed.hostname, parsed.port)) is not None:
                    return info
                await asyncio.sleep(WAIT_STEP)  # another process is starting it
    except TimeoutError:
        raise OptionsError(
            f"{uri} did not answer describe within {seconds:g} s"
        ) from None


async def _describe(host: str, port: int) -> Info | None:
    """The server's Info, or None while it is not listening or not answering."""
    try:
        async with AsyncTcpClient(host, port, read_timeout=2.0) as client:
            await client.write_event(Describe().event())
            while (event := await client.read_event()) is not None:
                if Info.is_type(event.type):
                    return Info.from_event(event)
    except (OSError, TimeoutError):
        pass
    return None


def _config(service: str) -> None:
    try:
        options = json.load(sys.stdin)
    except ValueError as err:
        raise OptionsError(f"the options are not JSON: {err}") from None
    if not isinstance(options, dict):
        raise OptionsError("the options are not a JSON object")
    text = whisper_toml(options) if service == "whisper" else kokoro_toml(options)
    try:
        load_config_text(text, OPTIONS_SOURCE)  # the servers' own checks
    except ConfigError as err:
        raise OptionsError(str(err).removeprefix(f"{OPTIONS_SOURCE}: ")) from None
    sys.stdout.write(text)


def main() -> None:
    """`config whisper|kokoro` or `wait tcp://HOST:PORT [--timeout S]`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    config = commands.add_parser("config", help="options JSON on stdin to TOML")
    config.add_argument("service", choices=("whisper", "kokoro"))
    wait = commands.add_parser("wait", help="wait until the server answers describe")
    wait.add_argument("uri")
    wait.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    try:
        if args.command == "config":
            _config(args.service)
        else:
            info = asyncio.run(wait_for_describe(args.uri, args.timeout))
            names = [program.name for program in (*info.asr, *info.tts)]
            print(f"{args.uri} answers: {', '.join(names)}")
    except OptionsError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(EXIT_FAILURE)


if __name__ == "__main__":
    main()
