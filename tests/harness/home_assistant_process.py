"""A real Home Assistant process, started as scripts/develop starts it, and its users.

The browser tests drive it the way a person's browser does: over HTTP and the
websocket API, with users made through onboarding and the auth API.
"""

import asyncio
from collections.abc import Iterator
import contextlib
from dataclasses import dataclass
import json
import os
from pathlib import Path
import subprocess
import sys
import time
from typing import Any
import urllib.parse
import urllib.request

from aiohttp import ClientSession, WSMsgType

from tests.harness.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
INTEGRATION = ROOT / "custom_components" / "desktop_assistant"
START_TIMEOUT = 180.0

CONFIGURATION = """\
frontend:
config:
conversation:
assist_pipeline:
http:
  server_host: 127.0.0.1
  server_port: {port}
logger:
  default: warning
  logs:
    custom_components.desktop_assistant: debug
"""


@dataclass
class Tokens:
    """An access token of one user, and what the frontend stores with it."""

    access_token: str
    refresh_token: str
    expires_in: int

    def frontend_storage(self, base_url: str) -> dict[str, Any]:
        """The `hassTokens` entry the frontend keeps in localStorage."""
        return {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "hassUrl": base_url,
            "clientId": f"{base_url}/",
            "expires": int(time.time() * 1000) + self.expires_in * 1000,
            "refresh_token": self.refresh_token,
        }


class HomeAssistantProcess:
    """`hass` in a config folder of its own, on a free loopback port."""

    def __init__(self, config_dir: Path, port: int | None = None) -> None:
        self.config_dir = config_dir
        # A port given is that of a hass started elsewhere (the household's).
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.client_id = f"{self.base_url}/"
        self.log = config_dir / "hass.out"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, ready_path: str = "/api/onboarding") -> None:
        """Write the configuration, start hass and wait for its HTTP server.

        `ready_path` answers once it is up: onboarding's, until the owner has
        onboarded (after that, `/manifest.json`).
        """
        components = self.config_dir / "custom_components"
        components.mkdir(parents=True, exist_ok=True)
        link = components / "desktop_assistant"
        if not link.exists():
            link.symlink_to(INTEGRATION)
        (self.config_dir / "configuration.yaml").write_text(
            CONFIGURATION.format(port=self.port)
        )
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "homeassistant",
                    "--config",
                    str(self.config_dir),
                    # Nothing is installed at run time; there is no internet.
                    "--skip-pip",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=os.environ | {"PYTHONPATH": ""},
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"hass exited: {self.log.read_text()[-3000:]}")
            with contextlib.suppress(OSError):
                self.request("GET", ready_path)
                return
            time.sleep(0.5)
        raise RuntimeError(f"hass did not start: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Stop hass as a person's Ctrl-C does."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        token: str | None = None,
        form: dict[str, str] | None = None,
    ) -> Any:
        """Send an HTTP request; return the decoded JSON answer."""
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(
            self.base_url + path, data=data, headers=headers, method=method
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    def _tokens(self, code: str) -> Tokens:
        answer = self.request(
            "POST",
            "/auth/token",
            form={
                "grant_type": "authorization_code",
                "code": code,
                "client_id": self.client_id,
            },
        )
        return Tokens(
            answer["access_token"], answer["refresh_token"], answer["expires_in"]
        )

    def onboard(self, username: str, password: str) -> Tokens:
        """Go through onboarding as its owner (an administrator)."""
        answer = self.request(
            "POST",
            "/api/onboarding/users",
            {
                "name": username.title(),
                "username": username,
                "password": password,
                "client_id": self.client_id,
                "language": "en",
            },
        )
        tokens = self._tokens(answer["auth_code"])
        for step, body in (
            ("core_config", {}),
            ("analytics", {}),
            (
                "integration",
                {"client_id": self.client_id, "redirect_uri": self.client_id},
            ),
        ):
            self.request("POST", f"/api/onboarding/{step}", body, tokens.access_token)
        # Keep the test's port as the confirmed HTTP configuration, as the
        # owner would in the dialog HA shows after a change of port.
        asyncio.run(
            self.websocket(tokens.access_token, {"type": "http/config/promote"})
        )
        return tokens

    def login(self, username: str, password: str) -> Tokens:
        """Log in through the login flow, as the login page does."""
        flow = self.request(
            "POST",
            "/auth/login_flow",
            {
                "client_id": self.client_id,
                "handler": ["homeassistant", None],
                "redirect_uri": self.client_id,
            },
        )
        answer = self.request(
            "POST",
            f"/auth/login_flow/{flow['flow_id']}",
            {"username": username, "password": password, "client_id": self.client_id},
        )
        return self._tokens(answer["result"])

    async def websocket(self, token: str, *commands: dict[str, Any]) -> list[Any]:
        """Send websocket commands in order; return their results (or errors)."""
        results = []
        async with (
            ClientSession() as session,
            session.ws_connect(f"{self.base_url}/api/websocket") as socket,
        ):
            await socket.receive_json()
            await socket.send_json({"type": "auth", "access_token": token})
            assert (await socket.receive_json())["type"] == "auth_ok"
            for number, command in enumerate(commands, start=1):
                await socket.send_json({"id": number, **command})
                while True:
                    message = await socket.receive()
                    assert message.type is WSMsgType.TEXT, message
                    answer = json.loads(message.data)
                    if answer.get("id") == number and answer["type"] == "result":
                        break
                results.append(answer["result"] if answer["success"] else answer)
        return results


@contextlib.contextmanager
def running(config_dir: Path) -> Iterator[HomeAssistantProcess]:
    """A started Home Assistant, stopped at the end."""
    process = HomeAssistantProcess(config_dir)
    try:
        process.start()
        yield process
    finally:
        process.stop()
