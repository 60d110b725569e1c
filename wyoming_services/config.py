"""The TOML file both servers read: built-in defaults merged key by key.

```toml
[whisper]
urls = ["http://127.0.0.1:8182"] # whisper.cpp whisper-servers, in order (or url =)
language = ""                   # "" = as Home Assistant asks, "auto", or a code
timeout = 30                    # seconds per utterance
connect_timeout = 3             # seconds for a server to accept and be healthy
wake_mac = ""                   # Wake-on-LAN for the first server's machine
wake_address = "255.255.255.255"
wake_port = 9
wake_from = []                  # who may wake it: Home Assistant's address (or network)
max_connections = 32            # at once; more are refused (16 satellites asking)
max_audio_mb = 32               # audio held across every connection (~1000 s)
idle_timeout = 60               # seconds a connection may send nothing
transcribe_at_pause = true      # during the silence before audio-stop

[kokoro]
model = "kokoro-v1.0.onnx"      # relative paths: from the config file's folder
voices = "voices-v1.0.bin"
speed = 1.0
max_characters = 10000          # longer one-shot text is refused; streamed text waits
providers = ["CPUExecutionProvider"]  # ONNX Runtime's, in order of preference
phrases = ["One moment."]       # spoken once at start, then from the cache
cache_mb = 32                   # the cache of short pieces already spoken
max_connections = 32            # at once; more are refused
max_waiting_characters = 160000 # text waiting to be spoken across every connection
idle_timeout = 60               # seconds a connection may send nothing

[voice.it]                      # style name = weight, blended
lang = "it"
blend = { if_sara = 0.8, af_bella = 0.2 }
```

Every key is optional; an unknown key is an error that names it, so that a
typo never silently falls back to a default.
"""

from dataclasses import dataclass
import ipaddress
import math
from pathlib import Path
import re
import tomllib
from typing import Any
from urllib.parse import urlsplit

from .credentials import without_credentials
from .limits import (
    DEFAULT_IDLE_SECONDS,
    DEFAULT_MAX_AUDIO_MB,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_WAITING_CHARACTERS,
)

RESERVED_VOICE_NAMES = frozenset({"auto"})
SPEED_RANGE = (0.5, 2.0)  # what kokoro-onnx accepts
MIB = 1 << 20
# ONNX Runtime's execution providers, in order of preference.
DEFAULT_PROVIDERS = ("CPUExecutionProvider",)
DEFAULT_CACHE_MB = 32
MAX_CACHE_MB = 65536

DEFAULTS: dict[str, dict[str, Any]] = {
    "whisper": {
        "url": "",
        "urls": [],
        "language": "",
        "timeout": 30.0,
        "connect_timeout": 3.0,
        "wake_mac": "",
        "wake_address": "255.255.255.255",
        "wake_port": 9,
        "wake_from": [],
        "max_connections": DEFAULT_MAX_CONNECTIONS,
        "max_audio_mb": float(DEFAULT_MAX_AUDIO_MB),
        "idle_timeout": DEFAULT_IDLE_SECONDS,
        "transcribe_at_pause": True,
    },
    "kokoro": {
        "model": "kokoro-v1.0.onnx",
        "voices": "voices-v1.0.bin",
        "speed": 1.0,
        "max_characters": 10000,
        "providers": list(DEFAULT_PROVIDERS),
        "phrases": [],
        "cache_mb": float(DEFAULT_CACHE_MB),
        "max_connections": DEFAULT_MAX_CONNECTIONS,
        "max_waiting_characters": DEFAULT_MAX_WAITING_CHARACTERS,
        "idle_timeout": DEFAULT_IDLE_SECONDS,
    },
}
VOICE_KEYS = ("lang", "blend")
DEFAULT_WHISPER_URL = "http://127.0.0.1:8182"
MAC_RE = re.compile(r"[0-9a-f]{2}([:-]?)(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}", re.IGNORECASE)


class ConfigError(Exception):
    """The config file cannot be used; the message says why in one line."""


@dataclass(frozen=True)
class WhisperSettings:
    """The whisper-servers to reach, in order, and which language to ask for."""

    urls: tuple[str, ...]
    language: str
    timeout: float
    connect_timeout: float = 3.0
    wake_mac: str = ""  # 12 hex digits, "" = no Wake-on-LAN
    wake_address: str = "255.255.255.255"
    wake_port: int = 9
    # Networks whose questions may wake it; empty: any client's.
    wake_from: tuple[str, ...] = ()
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_audio_bytes: int = DEFAULT_MAX_AUDIO_MB * MIB
    idle_timeout: float = DEFAULT_IDLE_SECONDS
    # Ask whisper-server at a pause in the speech, before audio-stop.
    transcribe_at_pause: bool = True


@dataclass(frozen=True)
class KokoroSettings:
    """Where the Kokoro model files are, how fast to speak, what to keep spoken."""

    model: Path
    voices: Path
    speed: float
    max_characters: int
    providers: tuple[str, ...] = DEFAULT_PROVIDERS
    phrases: tuple[str, ...] = ()  # spoken at start, so they come from the cache
    cache_bytes: int = DEFAULT_CACHE_MB * MIB
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_waiting_characters: int = DEFAULT_MAX_WAITING_CHARACTERS
    idle_timeout: float = DEFAULT_IDLE_SECONDS


@dataclass(frozen=True)
class VoiceSettings:
    """A `[voice.<name>]` table: styles blended with weights that sum to 1."""

    name: str
    lang: str | None
    blend: dict[str, float]


@dataclass(frozen=True)
class Config:
    """The whole file, defaults filled in."""

    whisper: WhisperSettings
    kokoro: KokoroSettings
    voices: tuple[VoiceSettings, ...]


def load_config(path: Path | None) -> Config:
    """Read `path` (or nothing: all defaults) into a checked `Config`."""
    if path is None:
        return _build({}, Path.cwd(), "defaults")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read: {err}") from None
    return _build(_parse(text, str(path)), path.parent, str(path))


def load_config_text(text: str, source: str) -> Config:
    """Check TOML made elsewhere (the add-ons' options) as a config file is."""
    return _build(_parse(text, source), Path.cwd(), source)


def _parse(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{source}: not valid TOML: {err}") from None
    except (ValueError, RecursionError):
        # tomllib's own limits: an integer of thousands of digits, nesting
        # a thousand deep.
        raise ConfigError(
            f"{source}: not valid TOML: a value is too long or nested too deep"
        ) from None


def _build(data: dict[str, Any], base: Path, source: str) -> Config:
    known = {*DEFAULTS, "voice"}
    for key in data:
        if key not in known:
            raise ConfigError(_unknown(source, key, known))
    whisper = _merge(source, "whisper", data.get("whisper", {}))
    kokoro = _merge(source, "kokoro", data.get("kokoro", {}))
    return Config(
        whisper=_whisper_settings(source, whisper),
        kokoro=_kokoro_settings(source, kokoro, base),
        voices=_voice_settings(source, data.get("voice", {})),
    )


def _merge(source: str, section: str, values: Any) -> dict[str, Any]:
    """Overlay the file's table on the section's defaults, one key at a time."""
    defaults = DEFAULTS[section]
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: [{section}] must be a table")
    merged = dict(defaults)
    for key, value in values.items():
        if key not in defaults:
            raise ConfigError(_unknown(source, f"{section}.{key}", defaults))
        expected = type(defaults[key])
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        if expected is float and is_number:
            try:
                merged[key] = float(value)
            except OverflowError:  # an integer of hundreds of digits
                raise ConfigError(f"{source}: {section}.{key} is too large") from None
        elif (
            (expected is bool and isinstance(value, bool))
            or (expected is int and is_number and isinstance(value, int))
            or (isinstance(value, str) and expected is str)
            or (
                expected is list
                and isinstance(value, list)
                and all(isinstance(item, str) for item in value)
            )
        ):
            merged[key] = value
        else:
            kind = {
                bool: "true or false",
                float: "a number",
                int: "a whole number",
                list: "a list of strings",
            }.get(expected, "a string")
            raise ConfigError(f"{source}: {section}.{key} must be {kind}")
    return merged


def _whisper_settings(source: str, values: dict[str, Any]) -> WhisperSettings:
    if values["url"] and values["urls"]:
        raise ConfigError(f"{source}: give whisper.urls or whisper.url, not both")
    urls = values["urls"] or [values["url"] or DEFAULT_WHISPER_URL]
    for url in urls:
        if not _is_http_url(url):
            raise ConfigError(
                f"{source}: whisper URL {without_credentials(url)!r:.80} "
                "must be an http:// or https:// URL"
            )
    for key in ("timeout", "connect_timeout"):
        if not 0 < values[key] < math.inf:  # nan and inf too
            raise ConfigError(f"{source}: whisper.{key} must be more than 0 seconds")
    _check_connections(source, "whisper", values)
    if not 0 < values["max_audio_mb"] < math.inf:
        raise ConfigError(f"{source}: whisper.max_audio_mb must be more than 0")
    for network in values["wake_from"]:
        try:
            ipaddress.ip_network(network.strip(), strict=False)
        except ValueError:
            raise ConfigError(
                f"{source}: whisper.wake_from: {network!r:.60} is not an IP "
                "address or network"
            ) from None
    mac = values["wake_mac"].strip()
    if mac and not MAC_RE.fullmatch(mac):
        raise ConfigError(
            f"{source}: whisper.wake_mac must be a MAC address like 00:11:22:aa:bb:cc"
        )
    try:
        ipaddress.IPv4Address(values["wake_address"].strip())
    except ValueError:
        raise ConfigError(
            f"{source}: whisper.wake_address must be an IPv4 address"
        ) from None
    if not 0 < values["wake_port"] < 65536:
        raise ConfigError(f"{source}: whisper.wake_port must be between 1 and 65535")
    return WhisperSettings(
        urls=tuple(dict.fromkeys(url.rstrip("/") for url in urls)),
        language=values["language"].strip(),
        timeout=values["timeout"],
        connect_timeout=values["connect_timeout"],
        wake_mac=re.sub(r"[:-]", "", mac).lower(),
        wake_address=values["wake_address"].strip(),
        wake_port=values["wake_port"],
        wake_from=tuple(network.strip() for network in values["wake_from"]),
        max_connections=values["max_connections"],
        max_audio_bytes=int(values["max_audio_mb"] * MIB),
        idle_timeout=values["idle_timeout"],
        transcribe_at_pause=values["transcribe_at_pause"],
    )


def _check_connections(source: str, section: str, values: dict[str, Any]) -> None:
    if values["max_connections"] < 1:
        raise ConfigError(f"{source}: {section}.max_connections must be at least 1")
    if not 0 < values["idle_timeout"] < math.inf:
        raise ConfigError(
            f"{source}: {section}.idle_timeout must be more than 0 seconds"
        )


def _is_http_url(url: str) -> bool:
    if any(char.isspace() or char in '"<>\\' for char in url):
        return False
    try:
        parsed = urlsplit(url)
        parsed.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.hostname)


def _kokoro_settings(source: str, values: dict[str, Any], base: Path) -> KokoroSettings:
    low, high = SPEED_RANGE
    if not low <= values["speed"] <= high:
        raise ConfigError(f"{source}: kokoro.speed must be between {low} and {high}")
    if values["max_characters"] < 1:
        raise ConfigError(f"{source}: kokoro.max_characters must be at least 1")
    if not values["providers"]:
        raise ConfigError(f"{source}: kokoro.providers must name at least one")
    _check_connections(source, "kokoro", values)
    if values["max_waiting_characters"] < values["max_characters"]:
        raise ConfigError(
            f"{source}: kokoro.max_waiting_characters must be at least "
            "kokoro.max_characters"
        )
    if not 0 <= values["cache_mb"] <= MAX_CACHE_MB:  # nan and inf too
        raise ConfigError(
            f"{source}: kokoro.cache_mb must be between 0 and {MAX_CACHE_MB}"
        )
    return KokoroSettings(
        model=base / Path(values["model"]).expanduser(),
        voices=base / Path(values["voices"]).expanduser(),
        speed=values["speed"],
        max_characters=values["max_characters"],
        providers=tuple(name.strip() for name in values["providers"]),
        phrases=tuple(phrase.strip() for phrase in values["phrases"] if phrase.strip()),
        cache_bytes=int(values["cache_mb"] * MIB),
        max_connections=values["max_connections"],
        max_waiting_characters=values["max_waiting_characters"],
        idle_timeout=values["idle_timeout"],
    )


def _voice_settings(source: str, tables: Any) -> tuple[VoiceSettings, ...]:
    if not isinstance(tables, dict):
        raise ConfigError(f"{source}: [voice] must hold [voice.<name>] tables")
    voices = []
    for name, table in tables.items():
        where = f"voice.{name}"
        if name in RESERVED_VOICE_NAMES:
            raise ConfigError(f"{source}: [{where}]: the name {name!r} is reserved")
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [{where}] must be a table")
        for key in table:
            if key not in VOICE_KEYS:
                raise ConfigError(_unknown(source, f"{where}.{key}", VOICE_KEYS))
        lang = table.get("lang")
        if lang is not None and (not isinstance(lang, str) or not lang.strip()):
            raise ConfigError(f"{source}: {where}.lang must be a language code")
        voices.append(
            VoiceSettings(
                name=name,
                lang=lang.strip() if lang else None,
                blend=_blend(source, where, table.get("blend")),
            )
        )
    return tuple(voices)


def _blend(source: str, where: str, blend: Any) -> dict[str, float]:
    if not isinstance(blend, dict) or not blend:
        raise ConfigError(f"{source}: {where}.blend must be a table of style = weight")
    for style, weight in blend.items():
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not 0 < weight < 1e300  # also nan, inf and ints no float holds
        ):
            raise ConfigError(
                f"{source}: {where}.blend.{style} must be a weight above 0"
            )
    total = sum(blend.values())
    return {style: weight / total for style, weight in blend.items()}


def _unknown(source: str, key: str, known: Any) -> str:
    return f"{source}: unknown key {key!r} (known: {', '.join(sorted(known))})"
