"""Fixtures for the Wyoming servers' tests."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
import subprocess
import sys

import pytest

from wyoming_services.config import load_config
from wyoming_services.kokoro.__main__ import KokoroService, build_service

from tests.harness.wyoming import KOKORO_VOICES
from tests.harness.whisper_server import WhisperServerStandIn, serve

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Kokoro model and voices file, made by scripts/make-test-models."""
    folder = tmp_path_factory.mktemp("models")
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make-test-models"), str(folder)],
        check=True,
        capture_output=True,
    )
    return folder


def write_kokoro_config(folder: Path, models: Path, extra: str = KOKORO_VOICES) -> Path:
    """A config file for the tiny model, with `extra` appended."""
    path = folder / "kokoro.toml"
    path.write_text(
        f'[kokoro]\nmodel = "{models / "kokoro-v1.0.onnx"}"\n'
        f'voices = "{models / "voices-v1.0.bin"}"\n{extra}'
    )
    return path


@pytest.fixture
def kokoro_config(tmp_path: Path, tiny_models: Path) -> Path:
    """Config with the seed's two voices."""
    return write_kokoro_config(tmp_path, tiny_models)


@pytest.fixture
def kokoro_service(kokoro_config: Path) -> Iterator[KokoroService]:
    """The Kokoro service as the server builds it, for in-process servers."""
    service = build_service(load_config(kokoro_config))
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
async def whisper_server(socket_enabled: None) -> AsyncIterator[WhisperServerStandIn]:
    """A whisper-server stand-in; the test fails if the wrapper broke its contract."""
    async with serve(WhisperServerStandIn()) as stand_in:
        yield stand_in
    assert stand_in.violations == []
