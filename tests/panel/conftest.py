"""One real Home Assistant with this integration for all browser tests of a module."""

import asyncio
from collections.abc import Iterator
from pathlib import Path
import shutil
import threading

import pytest
import pytest_socket

from tests.harness.browser import Page, chromium
from tests.harness.home_assistant_process import HomeAssistantProcess, Tokens, running
from tests.harness.llama_server import LlamaServerStandIn

from .seed import seed_record

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "panel"
ADMIN = ("anouk", "admin-password-1")
MEMBER = ("bram", "member-password-1")
LOOPBACK = ["127.0.0.1", "::1"]


class StandInThread:
    """The llama-server stand-in on an event loop of its own, beside the tests."""

    def __init__(self) -> None:
        self.stand_in = LlamaServerStandIn()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> LlamaServerStandIn:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.stand_in.start(), self.loop).result(10)
        return self.stand_in

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.stand_in.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


@pytest.fixture(scope="module", autouse=True)
def loopback_sockets() -> None:
    """Let the module's servers and browser talk over loopback.

    The test plugin blocks sockets before each test; module-scoped fixtures
    are set up before a test's own `socket_enabled` could lift that.
    Selenium reaches chromedriver as localhost, which may be ::1.
    """
    pytest_socket.enable_socket()
    pytest_socket.socket_allow_hosts(LOOPBACK)


@pytest.fixture(autouse=True)
def sockets_in_tests(socket_enabled: None) -> None:
    """Each test talks to the servers and chromedriver too."""
    pytest_socket.socket_allow_hosts(LOOPBACK)


@pytest.fixture(scope="module")
def llama_stand_in() -> Iterator[LlamaServerStandIn]:
    """A llama-server stand-in for the agent of the Home Assistant under test."""
    with StandInThread() as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def home_assistant(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    llama_stand_in: LlamaServerStandIn,
) -> Iterator[HomeAssistantProcess]:
    """Home Assistant on a config folder with the household's record."""
    config_dir = tmp_path_factory.mktemp("config")
    seed_record(config_dir)
    try:
        with running(config_dir) as process:
            yield process
    finally:
        # Home Assistant's own log, for whoever reads a failure.
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        log = config_dir / "hass.out"
        if log.exists():
            shutil.copyfile(log, ARTIFACTS / f"{request.module.__name__}.hass.log")


@pytest.fixture(scope="module")
def admin_tokens(home_assistant: HomeAssistantProcess) -> Tokens:
    """The owner's tokens; onboarding made the owner."""
    return home_assistant.onboard(*ADMIN)


@pytest.fixture(scope="module")
def member_tokens(home_assistant: HomeAssistantProcess, admin_tokens: Tokens) -> Tokens:
    """A household member who is not an administrator."""
    return add_member(home_assistant, admin_tokens)


def add_member(home_assistant: HomeAssistantProcess, admin_tokens: Tokens) -> Tokens:
    """Add MEMBER, who is not an administrator, as the owner does; their tokens."""
    user = asyncio.run(
        home_assistant.websocket(
            admin_tokens.access_token,
            {
                "type": "config/auth/create",
                "name": MEMBER[0].title(),
                "group_ids": ["system-users"],
            },
        )
    )[0]["user"]
    asyncio.run(
        home_assistant.websocket(
            admin_tokens.access_token,
            {
                "type": "config/auth_provider/homeassistant/create",
                "user_id": user["id"],
                "username": MEMBER[0],
                "password": MEMBER[1],
            },
        )
    )
    return home_assistant.login(*MEMBER)


@pytest.fixture(scope="module")
def integration(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
) -> str:
    """Add Desktop Assistant as a person does, through its config flow."""
    token = admin_tokens.access_token
    flow = home_assistant.request(
        "POST",
        "/api/config/config_entries/flow",
        {"handler": "desktop_assistant", "show_advanced_options": False},
        token,
    )
    result = home_assistant.request(
        "POST",
        f"/api/config/config_entries/flow/{flow['flow_id']}",
        {"url": llama_stand_in.url, "api_key": ""},
        token,
    )
    assert result["type"] == "create_entry", result
    return result["result"]["entry_id"]


@pytest.fixture
def browser() -> Iterator[Page]:
    """A headless Chromium; the caller logs in."""
    with chromium() as driver:
        yield driver


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
