"""A real `hass` killed while the nightly pass runs: the next start marks the run."""

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from custom_components.desktop_assistant.const import DOMAIN
from tests.harness.home_assistant_process import HomeAssistantProcess
from tests.harness.llama_server import LlamaServerStandIn, text_reply

ADMIN = ("anouk", "admin-password-1")
PREFIX = f"{DOMAIN}/memory"


def add_integration(process: HomeAssistantProcess, token: str, url: str) -> None:
    """Add Desktop Assistant through its config flow, as a person does."""
    flow = process.request(
        "POST", "/api/config/config_entries/flow", {"handler": DOMAIN}, token
    )
    result = process.request(
        "POST",
        f"/api/config/config_entries/flow/{flow['flow_id']}",
        {"url": url, "api_key": ""},
        token,
    )
    assert result["type"] == "create_entry", result


async def call(process: HomeAssistantProcess, token: str, **command: Any) -> Any:
    (answer,) = await process.websocket(token, command)
    return answer


async def until_saved(storage: Path, *marks: tuple[str, str]) -> None:
    """Wait until HA's delayed saves put each (file, text) on disk."""
    for _ in range(240):
        if all(
            (storage / name).exists() and text in (storage / name).read_text()
            for name, text in marks
        ):
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"never saved: {marks}")


async def until_answered(
    process: HomeAssistantProcess, token: str, command: str
) -> Any:
    """The command's answer once the integration has set up (HTTP comes first)."""
    for _ in range(120):
        answer = await call(process, token, type=command)
        if answer.get("success", True):
            return answer
        assert answer["error"]["code"] == "unknown_command", answer
        await asyncio.sleep(1)
    lines = process.log.read_text().splitlines()
    ours = [line for line in lines if DOMAIN in line or "Error" in line]
    raise AssertionError(f"{command} never answered: " + "\n".join(ours[-40:]))


# Two starts of a real Home Assistant, on a machine that may be busy.
@pytest.mark.timeout(900)
async def test_a_run_killed_midway_is_marked_at_the_next_start(
    tmp_path: Path, llama_server: LlamaServerStandIn
) -> None:
    process = HomeAssistantProcess(tmp_path)
    await asyncio.to_thread(process.start)
    try:
        tokens = await asyncio.to_thread(process.onboard, *ADMIN)
        token = tokens.access_token
        await asyncio.to_thread(add_integration, process, token, llama_server.url)
        await call(
            process,
            token,
            type=f"{PREFIX}/pages/create",
            name="Anouk",
            page_type="person",
            text="Sara's sister.\n",
        )
        # The plan never comes: the run is in progress when hass dies.
        no_plan = {"rewrite": [], "create": [], "merge": []}
        llama_server.script = [text_reply(json.dumps(no_plan), delay=600)]
        running = asyncio.create_task(
            call(process, token, type=f"{DOMAIN}/jobs/run_now", job="nightly")
        )
        await asyncio.wait_for(llama_server.chat_received.wait(), 120)
        listed = await call(process, token, type=f"{PREFIX}/runs/list")
        assert listed["running"] is True
        assert [run["outcome"] for run in listed["runs"]] == ["running"]
        # What a person set up before is on disk, as it is in a home; the
        # kill then takes only what the run was doing.
        await until_saved(
            tmp_path / ".storage",
            ("core.config_entries", DOMAIN),
            ("auth_provider.homeassistant", ADMIN[0]),
        )
        # SIGKILL: no shutdown, nothing flushed on the way out.
        assert process._process is not None
        process._process.kill()
        await asyncio.to_thread(process._process.wait)
        with contextlib.suppress(Exception):
            await running
        llama_server.stopping.set()

        # Onboarded: the frontend's manifest says the HTTP server is up.
        await asyncio.to_thread(process.start, "/manifest.json")
        tokens = await asyncio.to_thread(process.login, *ADMIN)
        listed = await until_answered(
            process, tokens.access_token, f"{PREFIX}/runs/list"
        )
        assert listed["running"] is False
        assert [(run["outcome"], run["outcome_detail"]) for run in listed["runs"]] == [
            ("failed", "interrupted")
        ]
        pages = await call(process, tokens.access_token, type=f"{PREFIX}/pages/list")
        assert [page["name"] for page in pages["pages"]] == ["Anouk"]
    finally:
        # Blocking on purpose: it must run even when the test is cut short.
        process.stop()
