"""`user:password@` in a whisper-server URL reaches that server (basic auth),
never a Wyoming client (describe, error events) or the relay's log."""

import base64
import logging
from pathlib import Path
import signal

import pytest
from wyoming.asr import Transcript
from wyoming.error import Error
from wyoming.info import Describe, Info

from tests.harness.whisper_server import WhisperServerStandIn, serve
from tests.harness.wyoming import (
    free_port,
    module_argv,
    read_until,
    send_utterance,
    server_process,
    tcp_client,
    tone,
    whisper_failover,
)

SECRETS = ("admin", "hunter2", "proxyuser", "s3cr@t")


def with_credentials(url: str, user: str, password: str) -> str:
    """`url` with `user:password@` before its host (a raw `@` kept raw)."""
    return url.replace("http://", f"http://{user}:{password}@", 1)


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


async def describe(port: int) -> Info:
    async with tcp_client(port) as client:
        await client.write_event(Describe().event())
        return Info.from_event((await read_until(client, "info"))[-1])


async def transcribe(port: int) -> Transcript | Error:
    async with tcp_client(port) as client:
        await send_utterance(client, tone(16000, 2, 1), language="it")
        event = (await read_until(client, "transcript"))[-1]
    if Error.is_type(event.type):
        return Error.from_event(event)
    return Transcript.from_event(event)


@pytest.fixture
async def guarded_server(socket_enabled: None) -> WhisperServerStandIn:
    """A whisper-server behind basic auth, still loading its model."""
    stand_in = WhisperServerStandIn(loading=True)
    async with serve(stand_in):
        yield stand_in
    assert stand_in.violations == []


async def test_credentials_stay_out_of_describe_errors_and_the_log(
    guarded_server: WhisperServerStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "wyoming_services")
    down = f"http://127.0.0.1:{free_port()}"
    urls = [
        with_credentials(down, "admin", "hunter2"),
        with_credentials(guarded_server.url, "proxyuser", "s3cr@t"),
    ]
    async with whisper_failover(urls) as (port, _):
        info = await describe(port)
        refused = await transcribe(port)
        guarded_server.loading = False
        heard = await transcribe(port)

    (model,) = info.asr[0].models
    assert model.description == (
        f"the model loaded by whisper-server at {down}, {guarded_server.url}"
    )
    assert isinstance(refused, Error)
    assert refused.text.startswith(
        f"no whisper-server answers: whisper-server at {down} is unreachable ("
    )
    assert refused.text.endswith(
        f"whisper-server at {guarded_server.url} is loading its model (503)"
    )
    assert_no_secret(refused.text)
    assert f"whisper-server at {down} is unreachable" in caplog.text
    assert f"(whisper-server at {guarded_server.url} " in caplog.text
    assert_no_secret(caplog.text)
    # The credentials still reach the server they belong to.
    assert heard == Transcript(text="Accendi la luce in cucina.", language="it")
    (request,) = guarded_server.requests
    basic = base64.b64encode(b"proxyuser:s3cr@t").decode("ascii")
    assert request.authorization == f"Basic {basic}"


async def test_a_server_that_does_not_answer_in_time_is_named_without_them(
    guarded_server: WhisperServerStandIn,
) -> None:
    guarded_server.loading = False
    guarded_server.delay = 5.0
    url = with_credentials(guarded_server.url, "proxyuser", "s3cr@t")
    async with whisper_failover([url], whisper_timeout=0.3) as (port, _):
        result = await transcribe(port)
    assert result == Error(
        text=f"whisper-server at {guarded_server.url} did not answer within 0.3 s",
        code="whisper-server",
    )


async def test_the_relay_process_logs_no_credentials(
    socket_enabled: None, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    config = tmp_path / "whisper.toml"
    config.write_text(
        f'[whisper]\nurls = ["{with_credentials(down, "admin", "hunter2")}"]\n'
    )
    port = free_port()
    argv = module_argv(
        "wyoming_services.whisper",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--config",
        str(config),
        "--debug",
    )
    stderr = tmp_path / "stderr.log"
    async with server_process(argv, port, stderr) as server:
        info = await describe(port)
        result = await transcribe(port)
        server.send_signal(signal.SIGTERM)
        assert await server.wait() == 0
    log = stderr.read_text()
    assert f"forwarding to whisper-server at {down} (in this order)" in log
    assert f"no whisper-server answers ({down})" in log
    assert isinstance(result, Error)
    assert result.text.startswith(f"whisper-server at {down} is unreachable (")
    assert_no_secret(log + info.asr[0].models[0].description + result.text)
