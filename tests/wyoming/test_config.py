"""The TOML file both servers read."""

from pathlib import Path

import pytest

from wyoming_services.config import (
    Config,
    ConfigError,
    KokoroSettings,
    VoiceSettings,
    WhisperSettings,
    load_config,
)


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_no_file_means_all_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config(None) == Config(
        whisper=WhisperSettings(
            urls=("http://127.0.0.1:8182",), language="", timeout=30.0
        ),
        kokoro=KokoroSettings(
            model=tmp_path / "kokoro-v1.0.onnx",
            voices=tmp_path / "voices-v1.0.bin",
            speed=1.0,
            max_characters=10000,
        ),
        voices=(),
    )


def test_the_bounds_for_all_clients_are_read(tmp_path: Path) -> None:
    config = load_config(
        config_file(
            tmp_path,
            "[whisper]\nmax_connections = 4\nmax_audio_mb = 1.5\nidle_timeout = 5\n"
            'wake_from = ["192.168.1.10", " 10.0.0.0/8 "]\n'
            "[kokoro]\nmax_connections = 3\nmax_waiting_characters = 20000\n"
            "idle_timeout = 9\n",
        )
    )
    whisper, kokoro = config.whisper, config.kokoro
    assert (whisper.max_connections, whisper.max_audio_bytes) == (4, 3 << 19)
    assert (whisper.idle_timeout, whisper.wake_from) == (
        5,
        ("192.168.1.10", "10.0.0.0/8"),
    )
    assert (kokoro.max_connections, kokoro.max_waiting_characters) == (3, 20000)
    assert kokoro.idle_timeout == 9
    defaults = load_config(None)
    assert (defaults.whisper.max_connections, defaults.whisper.wake_from) == (32, ())
    assert defaults.whisper.max_audio_bytes == 32 << 20
    assert defaults.kokoro.max_waiting_characters == 160000


def test_keys_are_merged_one_by_one(tmp_path: Path) -> None:
    config = load_config(
        config_file(
            tmp_path,
            '[whisper]\nlanguage = "auto"\ntimeout = 5\n'
            '[kokoro]\nmodel = "models/kokoro.onnx"\n',
        )
    )
    assert config.whisper == WhisperSettings(
        urls=("http://127.0.0.1:8182",), language="auto", timeout=5.0
    )
    assert config.whisper.transcribe_at_pause  # on unless turned off
    assert not load_config(
        config_file(tmp_path, "[whisper]\ntranscribe_at_pause = false\n")
    ).whisper.transcribe_at_pause
    # Relative paths are read from the config file's folder.
    assert config.kokoro == KokoroSettings(
        model=tmp_path / "models" / "kokoro.onnx",
        voices=tmp_path / "voices-v1.0.bin",
        speed=1.0,
        max_characters=10000,
    )


def test_voice_blends_are_normalised_in_file_order(tmp_path: Path) -> None:
    config = load_config(
        config_file(
            tmp_path,
            '[voice.it]\nlang = "it"\nblend = { if_sara = 3, af_bella = 1 }\n'
            "[voice.en]\nblend = { af_heart = 0.5 }\n",
        )
    )
    assert config.voices == (
        VoiceSettings(name="it", lang="it", blend={"if_sara": 0.75, "af_bella": 0.25}),
        VoiceSettings(name="en", lang=None, blend={"af_heart": 1.0}),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("card = 1\n", "unknown key 'card' (known: kokoro, voice, whisper)"),
        (
            '[whisper]\nlnguage = "it"\n',
            "unknown key 'whisper.lnguage' (known: connect_timeout, idle_timeout, language, max_audio_mb, max_connections, timeout, transcribe_at_pause, url, urls, wake_address, wake_from, wake_mac, wake_port)",
        ),
        (
            "[kokoro]\nsped = 1.2\n",
            "unknown key 'kokoro.sped' (known: cache_mb, idle_timeout, max_characters, max_connections, max_waiting_characters, model, phrases, providers, speed, voices)",
        ),
        (
            "[voice.it]\nblend = { if_sara = 1 }\nlng = 'it'\n",
            "unknown key 'voice.it.lng' (known: blend, lang)",
        ),
        ('[whisper]\ntimeout = "10"\n', "whisper.timeout must be a number"),
        ("[whisper]\nurl = 8182\n", "whisper.url must be a string"),
        (
            '[whisper]\nurl = "localhost:8182"\n',
            "whisper URL 'localhost:8182' must be an http:// or https:// URL",
        ),
        ('[whisper]\nurls = "http://a:1"\n', "whisper.urls must be a list of strings"),
        ("[whisper]\nurls = [8182]\n", "whisper.urls must be a list of strings"),
        (
            '[whisper]\nurls = ["http://a:1", "ftp://b"]\n',
            "whisper URL 'ftp://b' must be an http:// or https:// URL",
        ),
        (
            '[whisper]\nurl = "http://a:1"\nurls = ["http://b:1"]\n',
            "give whisper.urls or whisper.url, not both",
        ),
        ("[whisper]\nconnect_timeout = -1\n", "whisper.connect_timeout must be more"),
        ('[whisper]\nwake_mac = "00:11:22"\n', "whisper.wake_mac must be a MAC"),
        ('[whisper]\nwake_mac = "$(reboot)"\n', "whisper.wake_mac must be a MAC"),
        ('[whisper]\nwake_address = "desktop"\n', "wake_address must be an IPv4"),
        ("[whisper]\nwake_port = 70000\n", "wake_port must be between 1 and 65535"),
        ('[whisper]\ntranscribe_at_pause = "no"\n', "must be true or false"),
        ("[whisper]\ntranscribe_at_pause = 0\n", "must be true or false"),
        ("[whisper]\ntimeout = -1\n", "whisper.timeout must be more than 0 seconds"),
        ("[whisper]\nmax_connections = 0\n", "whisper.max_connections must be at"),
        ("[whisper]\nmax_audio_mb = 0\n", "whisper.max_audio_mb must be more than 0"),
        ("[whisper]\nidle_timeout = nan\n", "whisper.idle_timeout must be more than"),
        ('[whisper]\nwake_from = ["ha.local"]\n', "'ha.local' is not an IP address"),
        ('[whisper]\nwake_from = "10.0.0.2"\n', "wake_from must be a list of strings"),
        ("[kokoro]\nmax_connections = -1\n", "kokoro.max_connections must be at"),
        ("[kokoro]\nidle_timeout = 0\n", "kokoro.idle_timeout must be more than 0"),
        (
            "[kokoro]\nmax_waiting_characters = 100\n",
            "kokoro.max_waiting_characters must be at least kokoro.max_characters",
        ),
        ("[kokoro]\nspeed = 3\n", "kokoro.speed must be between 0.5 and 2.0"),
        ("[kokoro]\nspeed = true\n", "kokoro.speed must be a number"),
        (
            "[kokoro]\nmax_characters = 5.5\n",
            "kokoro.max_characters must be a whole number",
        ),
        ("[kokoro]\nmax_characters = 0\n", "kokoro.max_characters must be at least 1"),
        ("whisper = 1\n", "[whisper] must be a table"),
        ("[voice.auto]\nblend = { af_heart = 1 }\n", "the name 'auto' is reserved"),
        (
            "[voice.it]\nlang = 'it'\n",
            "voice.it.blend must be a table of style = weight",
        ),
        (
            "[voice.it]\nblend = { if_sara = 0 }\n",
            "voice.it.blend.if_sara must be a weight above 0",
        ),
        (
            "[voice.it]\nlang = ''\nblend = { if_sara = 1 }\n",
            "voice.it.lang must be a language code",
        ),
        ("[whisper\n", "not valid TOML: "),
        ("[kokoro]\nspeed = " + "9" * 5000 + "\n", "a value is too long"),
        ("whisper = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),
        ("[whisper]\ntimeout = 1" + "0" * 400 + "\n", "whisper.timeout is too large"),
        ("[whisper]\ntimeout = nan\n", "whisper.timeout must be more than 0"),
        ("[whisper]\nconnect_timeout = inf\n", "connect_timeout must be more than 0"),
        (
            "[voice.it]\nblend = { if_sara = inf }\n",
            "voice.it.blend.if_sara must be a weight above 0",
        ),
        (
            "[voice.it]\nblend = { if_sara = nan }\n",
            "voice.it.blend.if_sara must be a weight above 0",
        ),
    ],
)
def test_mistakes_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = config_file(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: no such file"):
        load_config(tmp_path / "missing.toml")
