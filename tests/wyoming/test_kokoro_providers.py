"""`[kokoro] providers`: ONNX Runtime's execution providers, in order.

This onnxruntime (the CPU build) knows every provider's name but has only
the CPU's: CUDA asked for falls back to the CPU with one warning; a name
ONNX Runtime does not know stops the server at start with a clear line.
"""

import asyncio
import logging
from pathlib import Path

import onnxruntime as rt
import pytest
from wyoming.tts import Synthesize, SynthesizeVoice

from tests.harness.wyoming import (
    KOKORO_VOICES,
    module_argv,
    pcm_of,
    read_until,
    tcp_client,
    tcp_server,
    write_kokoro_config,
)
from wyoming_services.config import ConfigError, load_config
from wyoming_services.kokoro.__main__ import build_service
from wyoming_services.kokoro.engine import execution_providers
from wyoming_services.service import ServiceError

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


@pytest.fixture(autouse=True)
def cpu_build() -> None:
    """These tests are about a machine without CUDA's provider."""
    if CUDA in rt.get_available_providers():
        pytest.skip("this onnxruntime has CUDA: the fallback cannot be seen")


@pytest.mark.parametrize("providers", [[CUDA, CPU], [CUDA]])
async def test_an_unavailable_provider_falls_back_to_the_cpu_with_one_warning(
    tmp_path: Path,
    tiny_models: Path,
    socket_enabled: None,
    caplog: pytest.LogCaptureFixture,
    providers: list[str],
) -> None:
    caplog.set_level(logging.INFO, "wyoming_services")
    listed = ", ".join(f'"{name}"' for name in providers)
    config = write_kokoro_config(
        tmp_path, tiny_models, f"providers = [{listed}]\n{KOKORO_VOICES}"
    )
    service = build_service(load_config(config))
    try:
        assert service.engine.providers == [CPU]
        async with (
            tcp_server(service.handler_factory) as port,
            tcp_client(port) as client,
        ):
            voice = SynthesizeVoice(name="en")
            await client.write_event(Synthesize(text="Hello.", voice=voice).event())
            events = await read_until(client, "audio-stop")
    finally:
        service.close()
    assert len(pcm_of(events)) > 0
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("wyoming_services")
    ]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"kokoro.providers: {CUDA} not available")
    assert "running on the CPU" in warnings[0]
    (start,) = [r.getMessage() for r in caplog.records if "at start" in r.message]
    assert start.startswith(f"Kokoro on {CPU}:")


def test_the_cpu_is_always_last_and_never_twice() -> None:
    assert execution_providers([CPU, CUDA]) == [CPU]
    assert execution_providers([CPU]) == [CPU]


def test_an_unknown_provider_is_a_clear_error_at_start(
    tmp_path: Path, tiny_models: Path
) -> None:
    config = write_kokoro_config(tmp_path, tiny_models, 'providers = ["CUDA"]\n')
    with pytest.raises(ServiceError) as caught:
        build_service(load_config(config))
    message = str(caught.value)
    assert message.startswith(
        "kokoro.providers: unknown execution provider 'CUDA' (known: "
    )
    assert CUDA in message and CPU in message
    assert "\n" not in message


async def test_an_unknown_provider_is_one_line_on_stderr(
    tmp_path: Path, tiny_models: Path
) -> None:
    config = write_kokoro_config(
        tmp_path, tiny_models, 'providers = ["NoSuchExecutionProvider"]\n'
    )
    process = await asyncio.create_subprocess_exec(
        *module_argv("wyoming_services.kokoro", "--uri", "stdio://"),
        *("--config", str(config)),
        stdin=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    assert process.returncode == 1
    (line,) = stderr.decode().strip().splitlines()
    assert line.startswith(
        "error: kokoro.providers: unknown execution provider "
        "'NoSuchExecutionProvider' (known: "
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("providers = []\n", "kokoro.providers must name at least one"),
        ('providers = "CPU"\n', "kokoro.providers must be a list of strings"),
        ("providers = [true]\n", "kokoro.providers must be a list of strings"),
        ("cache_mb = -1\n", "kokoro.cache_mb must be between 0 and 65536"),
        ("cache_mb = nan\n", "kokoro.cache_mb must be between 0 and 65536"),
        ("cache_mb = inf\n", "kokoro.cache_mb must be between 0 and 65536"),
        ('cache_mb = "big"\n', "kokoro.cache_mb must be a number"),
        ('phrases = "One moment."\n', "kokoro.phrases must be a list of strings"),
        ("phrases = [1, 2]\n", "kokoro.phrases must be a list of strings"),
    ],
)
def test_bad_kokoro_options_are_named(
    tmp_path: Path, tiny_models: Path, options: str, message: str
) -> None:
    config = write_kokoro_config(tmp_path, tiny_models, options)
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value) == f"{config}: {message}"
