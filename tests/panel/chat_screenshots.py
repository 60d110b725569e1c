"""Chat's screenshots for the README, from a real household.

scripts/develop's household (tests/harness/household.py) without speech, on
free ports in a tmp folder: llama-server on SmolLM2-135M-Instruct and Home
Assistant with this integration. Its owner installs the example tool `now`,
gives the agent the integration's tools, and asks in Chat a question that
needs it; the model's own tool call and streamed answer are photographed at
1280 pixels wide and on a phone, as they came.

    python -m tests.panel.chat_screenshots OUT_DIR

It lives beside the browser tests, whose Home Assistant client it uses.
"""

import argparse
import asyncio
from collections.abc import Iterator
import contextlib
from pathlib import Path
import shutil
import sys
import tempfile
import time
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API

from custom_components.desktop_assistant.const import (
    CONF_TEMPERATURE,
    CONF_TOOL_CALLS,
    CONF_TOOL_ROUNDS,
    CONFIG_FOLDER,
    DOMAIN,
    TOOL_CALLS_CONSTRAINED,
)
from tests.harness.browser import Page, chromium, phone
from tests.harness.home_assistant_process import (
    INTEGRATION,
    HomeAssistantProcess,
    Tokens,
)
from tests.harness.household import (
    Household,
    HouseholdPlan,
    start_home_assistant,
    start_llama_server,
    write_configuration,
)
from tests.harness.ports import free_port

OWNER = ("anouk", "owner-password-1")
QUESTION = "What day is it today?"
TOOL = "now"
CHAT = "/desktop-assistant-chat"
# The entry's title is what Chat names the server by; a URL's port would change.
SERVER_TITLE = "llama-server"
# SmolLM2 on a loaded 2-core machine: the tool call, then the answer.
ANSWER_WITHIN = 300.0
WIRED_WITHIN = 180.0
# The agent's options a person changes in its form for a 135M model: the
# integration's tools alone (Assist's control of the home is more than it can
# choose from), one round of tool calls before it answers, steady answers.
AGENT_CHANGES = {
    CONF_LLM_HASS_API: [DOMAIN],
    CONF_TOOL_CALLS: TOOL_CALLS_CONSTRAINED,
    CONF_TOOL_ROUNDS: 1,
    CONF_TEMPERATURE: 0.0,
}


@contextlib.contextmanager
def running_household() -> Iterator[HomeAssistantProcess]:
    """scripts/develop --no-voice's household in a tmp folder, onboarding open."""
    with tempfile.TemporaryDirectory() as dev:
        plan = HouseholdPlan(
            dev=Path(dev), llama_port=free_port(), hass_port=free_port()
        )
        household = Household(plan)
        try:
            config = write_configuration(
                plan, start_llama_server(household), voice=False
            )
            start_home_assistant(household, config, [], to_terminal=False)
            household.wait_until_ready(
                "home-assistant", plan.hass_port, "/api/onboarding"
            )
            yield HomeAssistantProcess(config, port=plan.hass_port)
        finally:
            household.stop()


def command(process: HomeAssistantProcess, tokens: Tokens, **message: Any) -> Any:
    """One websocket command as the owner; its answer."""
    return asyncio.run(process.websocket(tokens.access_token, message))[0]


def wait_for_agent(process: HomeAssistantProcess, tokens: Tokens) -> None:
    """dev_household adds the llama-server entry once Home Assistant has started."""
    deadline = time.monotonic() + WIRED_WITHIN
    # Until the integration is set up, the command is unknown: an error answer.
    while not command(process, tokens, type=f"{DOMAIN}/chat/agents").get("agents"):
        if time.monotonic() > deadline:
            raise SystemExit("chat_screenshots: the agent was not added")
        time.sleep(0.5)


def install_tool(process: HomeAssistantProcess, tokens: Tokens) -> None:
    """Copy the example tool into the config folder's tools, then reload them."""
    folder = process.config_dir / CONFIG_FOLDER / "tools"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(INTEGRATION / "examples" / "tools" / f"{TOOL}.toml", folder)
    command(process, tokens, type=f"{DOMAIN}/tools/reload")


def configure_agent(process: HomeAssistantProcess, tokens: Tokens) -> None:
    """Name the server, and change the agent's options through its form."""
    token = tokens.access_token
    (entry,) = process.request(
        "GET", f"/api/config/config_entries/entry?domain={DOMAIN}", None, token
    )
    command(
        process,
        tokens,
        type="config_entries/update",
        entry_id=entry["entry_id"],
        title=SERVER_TITLE,
    )
    (subentry,) = command(
        process,
        tokens,
        type="config_entries/subentries/list",
        entry_id=entry["entry_id"],
    )
    form = process.request(
        "POST",
        "/api/config/config_entries/subentries/flow",
        {
            "handler": [entry["entry_id"], subentry["subentry_type"]],
            "subentry_id": subentry["subentry_id"],
        },
        token,
    )
    result = process.request(
        "POST",
        f"/api/config/config_entries/subentries/flow/{form['flow_id']}",
        suggested_values(form) | AGENT_CHANGES,
        token,
    )
    if result.get("reason") != "reconfigure_successful":
        raise SystemExit(f"chat_screenshots: the agent's form said {result}")


def suggested_values(form: dict[str, Any]) -> dict[str, Any]:
    """What a form shows filled in: its fields' suggested values."""
    return {
        field["name"]: field["description"]["suggested_value"]
        for field in form["data_schema"]
        if "suggested_value" in field.get("description", {})
    }


def ask_in_chat(page: Page) -> str:
    """Start a thread with the question; wait for the answer; the thread's path."""
    page.open(CHAT)
    page.click("[data-action=new-thread]")
    page.find("[data-filter=agent] button[aria-pressed=true]")
    page.find("[data-field=message]").send_keys(QUESTION)
    page.click("[data-action=send]")
    page.find("[data-entry=tool_call]", timeout=ANSWER_WITHIN)
    page.find("[data-entry=assistant]:not([data-live])", timeout=ANSWER_WITHIN)
    # What the model did is photographed as it is, but only a call of the
    # tool, then an answer, is what the README says.
    calls = list(
        zip(
            [name.text for name in page.find_all("[data-entry=tool_call] strong")],
            page.attributes("[data-entry=tool_call]", "data-state"),
            strict=True,
        )
    )
    if calls != [(f"{DOMAIN}__{TOOL}", "done")] or page.find_all("[data-entry=fault]"):
        raise SystemExit(f"chat_screenshots: the model's calls were {calls}")
    return page.driver.current_url.removeprefix(page.base_url)


def photograph(process: HomeAssistantProcess, tokens: Tokens, out: Path) -> None:
    """The thread at 1280 pixels wide, its tool call opened; then on a phone."""
    storage = tokens.frontend_storage(process.base_url)
    with chromium() as driver:
        page = Page(driver, process.base_url)
        page.log_in(storage)
        thread = ask_in_chat(page)
        page.click("[data-entry=tool_call] summary")
        page.screenshot(out / "chat.png")
    with phone(process.base_url, storage, dark=False) as page:
        page.open(thread)
        page.click("[data-entry=tool_call] summary")
        page.screenshot(out / "chat-phone.png")


def main(argv: list[str]) -> int:
    """Make the screenshots into OUT_DIR."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.panel.chat_screenshots",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "out_dir", type=Path, help="where chat.png and chat-phone.png go"
    )
    out = parser.parse_args(argv).out_dir
    out.mkdir(parents=True, exist_ok=True)
    with running_household() as process:
        tokens = process.onboard(*OWNER)
        wait_for_agent(process, tokens)
        install_tool(process, tokens)
        configure_agent(process, tokens)
        photograph(process, tokens, out)
    print(f"chat_screenshots: wrote chat.png and chat-phone.png to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
