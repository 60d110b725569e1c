"""--zeroconf, proven: each service is found as `_wyoming._tcp` over mDNS on
loopback and Home Assistant's Wyoming discovery takes it.

Everything is bound to 127.0.0.1 (the servers announce on the interface of
the address they listen on), so no packet leaves the machine.
"""

import asyncio
from collections.abc import AsyncIterator
import contextlib
from pathlib import Path
import signal
import uuid

from homeassistant import config_entries
from homeassistant.components.zeroconf.discovery import info_from_service
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from zeroconf import IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from tests.harness.whisper_server import WhisperServerStandIn
from tests.harness.wyoming import free_port, module_argv, server_process
from wyoming_services.mdns import SERVICE_TYPE

FIND_SECONDS = 30.0  # generous: the machine is shared


@contextlib.asynccontextmanager
async def loopback_zeroconf() -> AsyncIterator[AsyncZeroconf]:
    zeroconf = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    try:
        yield zeroconf
    finally:
        await zeroconf.async_close()


async def find_service(zeroconf: AsyncZeroconf, instance: str) -> AsyncServiceInfo:
    """Browse `_wyoming._tcp` until `instance` appears; resolve it."""
    wanted = f"{instance}.{SERVICE_TYPE}"
    found = asyncio.Event()

    def on_change(
        zeroconf: Zeroconf,
        service_type: str,
        name: str,
        state_change: ServiceStateChange,
    ) -> None:
        if name == wanted and state_change is ServiceStateChange.Added:
            found.set()

    browser = AsyncServiceBrowser(zeroconf.zeroconf, SERVICE_TYPE, handlers=[on_change])
    try:
        async with asyncio.timeout(FIND_SECONDS):
            await found.wait()
    finally:
        await browser.async_cancel()
    info = AsyncServiceInfo(SERVICE_TYPE, wanted)
    assert await info.async_request(zeroconf.zeroconf, 3000)
    return info


async def still_announced(zeroconf: AsyncZeroconf, instance: str) -> bool:
    info = AsyncServiceInfo(SERVICE_TYPE, f"{instance}.{SERVICE_TYPE}")
    return await info.async_request(zeroconf.zeroconf, 1500)


@pytest.fixture
def service_argv(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[str, list[str], str]:
    """(module, extra arguments, the Wyoming service name HA will show)."""
    if request.param == "whisper":
        stand_in = request.getfixturevalue("whisper_server")
        assert isinstance(stand_in, WhisperServerStandIn)
        config = tmp_path / "whisper.toml"
        config.write_text(f'[whisper]\nurl = "{stand_in.url}"\n')
        return "wyoming_services.whisper", ["--config", str(config)], "whisper-cpp"
    config = request.getfixturevalue("kokoro_config")
    return "wyoming_services.kokoro", ["--config", str(config)], "kokoro"


@pytest.mark.parametrize("service_argv", ["whisper", "kokoro"], indirect=True)
async def test_service_is_discovered_and_offered_by_home_assistant(
    hass: HomeAssistant,
    service_argv: tuple[str, list[str], str],
    tmp_path: Path,
    socket_enabled: None,
) -> None:
    module, extra, service_name = service_argv
    instance = f"test-{module.rsplit('.', 1)[1]}-{uuid.uuid4().hex[:8]}"
    port = free_port()
    argv = module_argv(
        module, "--uri", f"tcp://127.0.0.1:{port}", "--zeroconf", instance, *extra
    )
    stderr = tmp_path / "stderr.log"
    async with loopback_zeroconf() as zeroconf:
        async with server_process(argv, port, stderr) as server:
            info = await find_service(zeroconf, instance)
            assert info.port == port
            assert info.parsed_addresses() == ["127.0.0.1"]

            # What HA's zeroconf integration hands the Wyoming config flow.
            discovery = info_from_service(info)
            assert discovery is not None
            assert (discovery.host, discovery.port) == ("127.0.0.1", port)
            assert discovery.name == f"{instance}.{SERVICE_TYPE}"
            result = await hass.config_entries.flow.async_init(
                "wyoming",
                context={"source": config_entries.SOURCE_ZEROCONF},
                data=discovery,
            )
            assert result["type"] is FlowResultType.FORM
            assert result["step_id"] == "zeroconf_confirm"
            assert result["description_placeholders"] == {"name": service_name}
            flow = hass.config_entries.flow.async_get(result["flow_id"])
            assert flow["context"]["unique_id"] == (
                f"{instance}.{SERVICE_TYPE}_{service_name}"
            )
            result = await hass.config_entries.flow.async_configure(
                result["flow_id"], user_input={}
            )
            assert result["type"] is FlowResultType.CREATE_ENTRY
            assert result["data"] == {"host": "127.0.0.1", "port": port}

            server.send_signal(signal.SIGTERM)
            assert await server.wait() == 0
        # SIGTERM withdrew the record (goodbye packets).
        assert not await still_announced(zeroconf, instance)
    log = stderr.read_text()
    assert f"announced as {instance!r} on 127.0.0.1:{port} (zeroconf)" in log
    assert "Traceback" not in log
    await hass.config_entries.async_unload(result["result"].entry_id)
