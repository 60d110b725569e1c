"""The add-ons' s6 scripts, run with a stand-in bashio: what the service is
started with, and what is announced to Home Assistant, and when."""

import asyncio
from collections.abc import AsyncIterator
import contextlib
import json
import os
from pathlib import Path
import socket
import subprocess
import sys
import tomllib

import pytest
from wyoming.event import async_read_event, async_write_event
import yaml

from tests.harness.ports import free_port
from wyoming_services.whisper.__main__ import build_info

ROOT = Path(__file__).resolve().parents[2]
BASHIO = Path(__file__).parent / "bashio"
SERVICES = {
    "kokoro": (ROOT / "addons/wyoming-kokoro", "wyoming-kokoro", 10200),
    "whisper": (ROOT / "addons/wyoming-whisper-relay", "wyoming-whisper-relay", 10300),
}
# The add-on's name in the Supervisor's DNS, as bashio::addon.hostname gives it.
ADDON_HOSTNAME = "local-wyoming-whisper-relay"
INFO = build_info(["http://127.0.0.1:8182"], "it")
# Records its arguments and the config file it was given, then exits.
SERVICE_STAND_IN = """#!/bin/bash
printf '%s\\n' "$@" >"$SERVICE_RECORD"
while (($#)); do
    [[ $1 == --config ]] && cp "$2" "$SERVICE_RECORD.toml"
    shift
done
"""


def script(service: str, name: str) -> Path:
    folder = SERVICES[service][0]
    return folder / "rootfs/etc/s6-overlay/s6-rc.d" / name / "run"


def script_env(tmp_path: Path, port: int, options: dict) -> dict[str, str]:
    """The container's environment, with the Supervisor's parts stood in for."""
    (tmp_path / "options.json").write_text(json.dumps(options))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for command in ("wyoming-kokoro", "wyoming-whisper-relay"):
        (bin_dir / command).write_text(SERVICE_STAND_IN)
        (bin_dir / command).chmod(0o755)
    return {
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "TMPDIR": str(tmp_path),
        "WYOMING_PORT": str(port),
        "BASHIO_OPTIONS": str(tmp_path / "options.json"),
        "BASHIO_RECORD": str(tmp_path / "discovery.jsonl"),
        "BASHIO_HOSTNAME": ADDON_HOSTNAME,
        "SERVICE_RECORD": str(tmp_path / "service.args"),
    }


def add_on_options(service: str) -> dict:
    config = yaml.safe_load((SERVICES[service][0] / "config.yaml").read_text())
    return config["options"]


def run_service_script(
    tmp_path: Path, service: str, options: dict
) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", BASHIO, script(service, service)],
        env=script_env(tmp_path, SERVICES[service][2], options),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("service", sorted(SERVICES))
@pytest.mark.parametrize("debug", [False, True])
def test_service_starts_with_its_options_as_config(
    tmp_path: Path, service: str, debug: bool
) -> None:
    options = add_on_options(service) | {"debug_logging": debug}
    result = run_service_script(tmp_path, service, options)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "service.args").read_text().splitlines()
    port = SERVICES[service][2]
    assert args[:3] == ["--uri", f"tcp://0.0.0.0:{port}", "--config"]
    assert Path(args[3]).parent == tmp_path and args[3].endswith(".toml")
    assert args[4:] == (["--debug"] if debug else [])
    config = tomllib.loads((tmp_path / "service.args.toml").read_text())
    if service == "kokoro":
        assert config["kokoro"]["model"] == "/share/kokoro/kokoro-v1.0.onnx"
        assert config["voice"] == {"en": {"lang": "en-us", "blend": {"af_heart": 1.0}}}
    else:
        assert config["whisper"]["urls"] == ["http://192.168.1.10:8182"]
        assert "wake_mac" not in config["whisper"]
        assert config["whisper"]["transcribe_at_pause"] is True


def test_transcribing_at_a_pause_can_be_turned_off(tmp_path: Path) -> None:
    options = add_on_options("whisper") | {"transcribe_at_pause": False}
    result = run_service_script(tmp_path, "whisper", options)
    assert result.returncode == 0, result.stderr
    config = tomllib.loads((tmp_path / "service.args.toml").read_text())
    assert config["whisper"]["transcribe_at_pause"] is False


@pytest.mark.parametrize(
    ("service", "options", "named"),
    [
        ("kokoro", {"voices": [{"name": "it", "blend": "if_sara"}]}, "voice it: blend"),
        ("whisper", {"urls": []}, "the option urls"),
        (
            "whisper",
            {"urls": ["http://a:1"], "timeout": "$(touch pwned)"},
            "whisper.timeout",
        ),
        ("whisper", {"language": "it\ud800"}, "error: language holds U+D800"),
        ("kokoro", {"voices_file": "\udc80.bin"}, "error: voices_file holds U+DC80"),
        ("whisper", {"language": "i\x7ft"}, "error: language holds the control"),
        ("kokoro", {"model": "/share/\x7f"}, "error: model holds the control"),
    ],
)
def test_bad_options_stop_the_add_on_before_the_service(
    tmp_path: Path, service: str, options: dict, named: str
) -> None:
    result = run_service_script(tmp_path, service, add_on_options(service) | options)
    assert result.returncode == 1
    assert "error: " in result.stderr
    assert named in result.stderr
    assert "Traceback" not in result.stderr
    assert "[FATAL] The add-on's options cannot be used" in result.stderr
    assert not (tmp_path / "service.args").exists()
    assert not (tmp_path / "pwned").exists()


class DescribeServer:
    """A Wyoming server that accepts but stays silent until told to answer."""

    def __init__(self) -> None:
        self.answering = False
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.connections += 1
        with contextlib.suppress(ConnectionError):
            while (event := await async_read_event(reader)) is not None:
                if event.type == "describe" and self.answering:
                    await async_write_event(INFO.event(), writer)
        writer.close()


@pytest.fixture
async def describe_server(socket_enabled: None) -> AsyncIterator[DescribeServer]:
    server = DescribeServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.mark.parametrize("service", sorted(SERVICES))
async def test_discovery_announces_once_the_service_answers_describe(
    tmp_path: Path, service: str, describe_server: DescribeServer
) -> None:
    env = script_env(tmp_path, describe_server.port, {})
    record = tmp_path / "discovery.jsonl"
    process = await asyncio.create_subprocess_exec(
        "bash",
        str(BASHIO),
        str(script(service, "discovery")),
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        # Listening but not answering (a model still loading): asked again and
        # again, nothing announced.
        for _ in range(600):
            if describe_server.connections >= 2:
                break
            await asyncio.sleep(0.05)
        assert describe_server.connections >= 2
        assert not record.exists()
        assert process.returncode is None

        describe_server.answering = True
        async with asyncio.timeout(60):
            _, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, stderr
    (line,) = record.read_text().splitlines()
    # The relay is on the host network, where `hostname` is the host's name:
    # it announces the add-on's name, which Home Assistant resolves.
    host = ADDON_HOSTNAME if service == "whisper" else socket.gethostname()
    assert json.loads(line) == {
        "service": "wyoming",
        "config": {"uri": f"tcp://{host}:{describe_server.port}"},
    }
    assert "[INFO] Announced the service to Home Assistant." in stderr.decode()


def test_wait_gives_up_with_one_line(socket_enabled: None) -> None:
    port = free_port()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "wyoming_services.addon",
            "wait",
            f"tcp://127.0.0.1:{port}",
            "--timeout",
            "0.3",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 1
    assert result.stderr == (
        f"error: tcp://127.0.0.1:{port} did not answer describe within 0.3 s\n"
    )


@pytest.mark.parametrize("uri", ["stdio://", "tcp://:10300", "unix:///run/x", "10300"])
def test_wait_refuses_what_is_not_a_tcp_uri(uri: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "wyoming_services.addon", "wait", uri],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 1
    assert result.stderr == f"error: {uri} is not tcp://HOST:PORT\n"
