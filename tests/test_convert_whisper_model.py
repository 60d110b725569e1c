"""scripts/convert-whisper-model: Whisper base from its PyPI packages to a
ggml file that the real whisper-server loads and transcribes speech with.

The inputs are the packages scripts/setup keeps in its wheel cache; without
them (--skip-real-engines) these tests skip.
"""

import io
import os
from pathlib import Path
import re
import subprocess
import sys
import wave

import aiohttp
import pytest

from custom_components.desktop_assistant.text import words
from tests.harness.real_engines import MISSING_WHISPER, speak, start_whisper_server

ROOT = Path(__file__).resolve().parents[1]
CONVERTER = ROOT / "scripts" / "convert-whisper-model"
SENTENCE = "What is the weather like in Rome tomorrow?"


def pinned(name: str) -> str:
    """A value scripts/setup pins, such as WHISPER_BASE_SHA256."""
    found = re.search(
        rf"^{name}=\"?([^\"\n]+)\"?$", (ROOT / "scripts/setup").read_text(), re.M
    )
    assert found, name
    return found[1]


def cached_package(requirement: str) -> Path:
    """The file of NAME==VERSION in the wheel cache, or skip."""
    name, version = requirement.split("==")
    cache = os.environ.get("WHEEL_CACHE")
    pattern = f"{name.replace('-', '_')}-{version}[-.]*"
    found = sorted(Path(cache).glob(pattern)) if cache else []
    if not found:
        pytest.skip(MISSING_WHISPER)
    return found[0]


def convert(
    out: Path, *parts: Path, sha256: str, assets: Path | None = None
) -> subprocess.CompletedProcess[str]:
    assets = assets or cached_package(pinned("OPENAI_WHISPER_SDIST"))
    return subprocess.run(
        [
            *(sys.executable, str(CONVERTER), "--assets", str(assets)),
            *("--sha256", sha256, str(out), *map(str, parts)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def base_parts() -> list[Path]:
    return [cached_package(part) for part in pinned("WHISPER_BASE_PARTS").split()]


def wav_of(pcm: bytes, rate: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(pcm)
    return buffer.getvalue()


async def test_the_converted_model_transcribes_a_spoken_sentence(
    tmp_path: Path, socket_enabled: None
) -> None:
    model = tmp_path / "ggml-base.bin"
    result = convert(model, *base_parts(), sha256=pinned("WHISPER_BASE_SHA256"))
    assert result.returncode == 0, result.stderr
    audio = wav_of(*speak(SENTENCE))
    with start_whisper_server(tmp_path, model=model) as server:
        form = aiohttp.FormData({"response_format": "json", "language": "en"})
        form.add_field("file", audio, filename="question.wav", content_type="audio/wav")
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{server.url}/inference", data=form) as response,
        ):
            answer = await response.json()
    assert words(answer["text"]) == words(SENTENCE)


def test_a_wrong_sha256_leaves_no_file(tmp_path: Path) -> None:
    model = tmp_path / "ggml-base.bin"
    result = convert(model, *base_parts(), sha256="0" * 64)
    assert result.returncode == 1
    assert "ggml-base.bin has sha256 " in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_no_whisper_model_is_refused_plainly(tmp_path: Path) -> None:
    not_a_model = tmp_path / "model.bin"
    not_a_model.write_bytes(b"\x06\x00\x00\x00\x05\x00BERT\x00")
    result = convert(
        tmp_path / "out.bin", not_a_model, sha256="0" * 64, assets=not_a_model
    )
    assert result.returncode == 1
    assert (
        result.stderr
        == "error: not a CTranslate2 Whisper model: a BERT, not a Whisper model\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]
