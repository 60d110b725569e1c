"""Each add-on's Dockerfile, built offline with podman on a stand-in base
image, and the image started: it answers Wyoming on its port and announces
itself.

The stand-in for Home Assistant's Debian base image is this project's own
debootstrapped userland (what runs the tests) without what a voice service
does not need, with the package's dependencies in its system site-packages
(Home Assistant's builder would have pip fetch them), a stand-in bashio and
s6's `with-contenv`. Our package goes in as a wheel built here. Where podman
cannot run the tests skip, loudly.
"""

import asyncio
from collections.abc import AsyncIterator, Iterator
import contextlib
from dataclasses import dataclass
import hashlib
from importlib import metadata
import json
from pathlib import Path
import re
import shutil
import subprocess
import sys
import tomllib
import uuid

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
import pytest
from wyoming.asr import Transcript
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize

from tests.harness.package import copy_package_source
from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import (
    free_port,
    read_until,
    send_utterance,
    tcp_client,
    tone,
)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
PODMAN = HERE / "podman"
# Runtime flags this machine needs (see the podman script).
RUNTIME = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit"]
RUNTIME += ["nproc=4096:4096"]
BASE_REPOSITORY = "localhost/desktop-assistant-addon-base"
# Mount points: in the image as empty folders (their contents are the host's).
MOUNT_POINTS = ("proc", "sys", "dev", "tmp", "run")
# What the stand-in base leaves out of the userland: the mount points' contents,
# caches, the browser, documentation, compilers, the big virtual env.
EXCLUDES = [
    "opt",
    "root",
    "var/cache",
    "var/lib/apt/lists",
    "var/lib/containers",
    "usr/lib/chromium",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/locale",
    "usr/share/icons",
    "usr/include",
    "usr/libexec",
    "usr/lib/gcc",
    "usr/lib/x86_64-linux-gnu/libLLVM*",
    "usr/lib/x86_64-linux-gnu/libgallium*",
    "usr/lib/x86_64-linux-gnu/libz3*",
]
WITH_CONTENV = '#!/bin/bash\n# s6-overlay stand-in: the environment is already the container\'s.\nexec "$@"\n'
DESCRIBE_TRIES = 600  # half a second apart: generous, the machine is shared


def podman(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(PODMAN), *args], capture_output=True, text=True, check=False, **kwargs
    )


@pytest.fixture(scope="module")
def podman_works() -> None:
    if shutil.which("podman") is None or shutil.which("runc") is None:
        pytest.skip("podman or runc is not installed: the add-on images were not built")
    result = podman("info", "--format", "{{.Store.GraphDriverName}}")
    if result.returncode != 0:
        pytest.skip(
            "podman is installed but not usable here (it is not installed in a "
            f"working form): {result.stderr.strip()[-300:]}"
        )


def dependency_closure() -> list[metadata.Distribution]:
    """The installed distributions our package needs, from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo, found = list(project["dependencies"]), {}
    while todo:
        requirement = Requirement(todo.pop())
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = canonicalize_name(requirement.name)
        if key not in found:
            found[key] = metadata.distribution(requirement.name)
            todo += found[key].requires or []
    return [found[key] for key in sorted(found)]


def stage_extras(folder: Path, distributions: list[metadata.Distribution]) -> None:
    """The files the stand-in base adds to the userland."""
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = folder / "usr/local/lib" / python / "dist-packages"
    for distribution in distributions:
        for file in distribution.files or []:
            if ".." in file.parts:
                continue  # console scripts: the image's venv makes its own
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(distribution.locate_file(file), target)
    (folder / "usr/bin").mkdir(parents=True)
    shutil.copy2(HERE / "bashio", folder / "usr/bin/bashio")
    (folder / "usr/bin/python3").symlink_to(python)
    (folder / "command").mkdir()
    (folder / "command/with-contenv").write_text(WITH_CONTENV)
    (folder / "command/with-contenv").chmod(0o755)


@pytest.fixture(scope="module")
def stand_in_base(podman_works: None, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The base image, imported once per machine (tagged by what goes in it)."""
    distributions = dependency_closure()
    digest = hashlib.sha256()
    for part in (
        (HERE / "bashio").read_bytes(),
        WITH_CONTENV.encode(),
        " ".join(EXCLUDES).encode(),
        " ".join(f"{d.name}=={d.version}" for d in distributions).encode(),
    ):
        digest.update(part)
    tag = f"{BASE_REPOSITORY}:{digest.hexdigest()[:16]}"
    if podman("image", "exists", tag).returncode == 0:
        return tag
    # An older stand-in (other dependencies) is not needed any more.
    older = podman("images", "--quiet", BASE_REPOSITORY).stdout.split()
    if older:
        podman("rmi", "--force", *older)
    extras = tmp_path_factory.mktemp("base-extras")
    stage_extras(extras, distributions)
    excludes = [f"--exclude=./{path}" for path in EXCLUDES]
    excludes += [f"--exclude=./{path}/*" for path in MOUNT_POINTS]
    excludes.append(f"--exclude=.{ROOT}")
    # The image importer refuses a path twice: of the extras, only what the
    # userland does not have.
    added = tmp_path_factory.mktemp("base-list") / "added"
    added.write_text(
        "".join(
            f"./{path.relative_to(extras)}\n"
            for path in sorted(extras.rglob("*"))
            if not (Path("/") / path.relative_to(extras)).exists()
        )
    )
    tar = subprocess.Popen(
        [
            "tar",
            "-c",
            *excludes,
            "-C",
            "/",
            ".",
            "-C",
            str(extras),
            "--no-recursion",
            "-T",
            str(added),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    result = podman("import", "-", tag, stdin=tar.stdout)
    tar.wait()
    assert result.returncode == 0, result.stderr
    return tag


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our package as a wheel, built from a copy of the source, offline."""
    folder = tmp_path_factory.mktemp("wheel")
    source = copy_package_source(folder / "source")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(folder),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (built,) = folder.glob("*.whl")
    return built


@dataclass
class Image:
    tag: str
    addon: str


@contextlib.contextmanager
def built_image(addon: str, base: str, wheel: Path, workdir: Path) -> Iterator[Image]:
    """Build the add-on's Dockerfile as the Supervisor would, but offline."""
    context = workdir / addon
    shutil.copytree(ROOT / "addons" / addon, context)
    shutil.copy2(wheel, context / "packages" / wheel.name)
    tag = f"localhost/test-{addon}:{uuid.uuid4().hex[:8]}"
    result = podman(
        "build",
        *RUNTIME,
        "--network=none",
        "--build-arg", f"BUILD_FROM={base}",
        "--build-arg", "PACKAGE=desktop-assistant-wyoming",
        "--build-arg", "PIP_ARGS=--no-index",
        "--build-arg", "APT_PACKAGES=",
        "-t", tag,
        str(context),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    try:
        yield Image(tag, addon)
    finally:
        podman("rmi", "-f", tag)


@contextlib.asynccontextmanager
async def running(
    image: Image, service: str, port: int, data: Path, *volumes: str
) -> AsyncIterator[str]:
    """Start the image's s6 service script on the host network; yield its name."""
    name = f"test-{image.addon}-{uuid.uuid4().hex[:8]}"
    mounts = [f"--volume={data}:/data", *(f"--volume={v}" for v in volumes)]
    result = podman(
        "run", "-d", *RUNTIME, "--pids-limit=0", "--network=host",
        f"--name={name}", f"--env=WYOMING_PORT={port}", *mounts,
        image.tag, f"/etc/s6-overlay/s6-rc.d/{service}/run",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    try:
        yield name
    finally:
        logs = podman("logs", name)
        print(logs.stdout, logs.stderr)
        podman("rm", "-f", name)


async def wait_for_info(port: int, name: str) -> Info:
    """Describe until the service answers, failing early if it exited."""
    for _ in range(DESCRIBE_TRIES):
        with contextlib.suppress(OSError, TimeoutError, AssertionError):
            async with tcp_client(port) as client:
                await client.write_event(Describe().event())
                return Info.from_event((await read_until(client, "info"))[-1])
        state = await asyncio.to_thread(
            podman, "inspect", "--format", "{{.State.Running}}", name
        )
        assert state.stdout.strip() == "true", podman("logs", name).stderr
        await asyncio.sleep(0.5)
    raise AssertionError("the service never answered describe")


def announce(image: Image, data: Path, port: int) -> dict:
    """Run the image's discovery step; return what it announced.

    In a container of its own on the host network, beside the service's:
    each call of the podman script has a mount namespace of its own, so
    `podman exec` cannot see a container another call started.
    """
    result = podman(
        "run", "--rm", *RUNTIME, "--pids-limit=0", "--network=host",
        f"--env=WYOMING_PORT={port}", f"--volume={data}:/data",
        image.tag, "/etc/s6-overlay/s6-rc.d/discovery/run",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Announced the service to Home Assistant." in result.stderr
    (line,) = (data / "discovery.jsonl").read_text().splitlines()
    announced = json.loads(line)
    assert announced["service"] == "wyoming"
    assert re.fullmatch(rf"tcp://[\w.-]+:{port}", announced["config"]["uri"])
    return announced


@pytest.mark.timeout(1800)
async def test_whisper_relay_image_answers_and_announces(
    stand_in_base: str,
    wheel: Path,
    whisper_server: WhisperServerStandIn,
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    options = {"urls": [whisper_server.url], "language": "", "debug_logging": False}
    (data / "options.json").write_text(json.dumps(options))
    port = free_port()
    with built_image("wyoming-whisper-relay", stand_in_base, wheel, tmp_path) as image:
        async with running(image, "whisper", port, data) as name:
            info = await wait_for_info(port, name)
            assert info.asr[0].name == "whisper-cpp"
            async with tcp_client(port) as client:
                await send_utterance(client, tone(16000, 2, 1), language="it")
                event = (await read_until(client, "transcript"))[-1]
            assert Transcript.from_event(event).text == "Accendi la luce in cucina."
            await asyncio.to_thread(announce, image, data, port)


@pytest.mark.timeout(1800)
async def test_kokoro_image_reads_models_from_share_answers_and_announces(
    stand_in_base: str,
    wheel: Path,
    tiny_models: Path,
    tmp_path: Path,
    socket_enabled: None,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    options = {
        "model": "/share/kokoro/kokoro-v1.0.onnx",
        "voices_file": "/share/kokoro/voices-v1.0.bin",
        "speed": 1.0,
        "voices": [{"name": "it", "lang": "it", "blend": "if_sara=0.8, af_bella=0.2"}],
        "debug_logging": False,
    }
    (data / "options.json").write_text(json.dumps(options))
    port = free_port()
    share = f"{tiny_models}:/share/kokoro:ro"
    with built_image("wyoming-kokoro", stand_in_base, wheel, tmp_path) as image:
        async with running(image, "kokoro", port, data, share) as name:
            info = await wait_for_info(port, name)
            assert info.tts[0].name == "kokoro"
            assert "it" in [voice.name for voice in info.tts[0].voices]
            async with tcp_client(port) as client:
                await client.write_event(Synthesize(text="Ciao a tutti.").event())
                events = await read_until(client, "audio-stop")
            assert any(e.type == "audio-chunk" and e.payload for e in events)
            await asyncio.to_thread(announce, image, data, port)


def test_the_base_gets_the_dependencies_not_the_package() -> None:
    names = {canonicalize_name(d.name) for d in dependency_closure()}
    assert {"wyoming", "aiohttp", "kokoro-onnx", "onnxruntime", "zeroconf"} <= names
    assert "desktop-assistant-wyoming" not in names
