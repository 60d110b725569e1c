"""What the browser tests of the panel share: opening it as a user, a command, a server."""

import asyncio
import json
import re
from typing import Any

from selenium import webdriver

from tests.harness.browser import Page
from tests.harness.home_assistant_process import (
    INTEGRATION,
    HomeAssistantProcess,
    Tokens,
)
from tests.harness.llama_server import LlamaServerStandIn

LANGUAGES = ("en", "de", "es", "fr", "it", "nl")

# Goes to a path of the panel as its own links do, without reloading the page.
NAVIGATE = """
history.pushState(null, "", arguments[0]);
window.dispatchEvent(new CustomEvent("location-changed", { detail: { replace: false } }));
"""


def open_page(
    driver: webdriver.Chrome,
    home_assistant: HomeAssistantProcess,
    tokens: Tokens,
    path: str = "/desktop-assistant",
) -> Page:
    """The browser logged in as the user, at a path of Home Assistant."""
    page = Page(driver, home_assistant.base_url)
    page.log_in(tokens.frontend_storage(home_assistant.base_url))
    page.open(path)
    return page


def websocket(
    home_assistant: HomeAssistantProcess, tokens: Tokens, **command: Any
) -> Any:
    """One websocket command as the user; its answer."""
    return asyncio.run(home_assistant.websocket(tokens.access_token, command))[0]


def open_panel(
    driver: webdriver.Chrome,
    home_assistant: HomeAssistantProcess,
    tokens: Tokens,
    path: str = "/desktop-assistant",
) -> Page:
    """The panel at a path, once its tabs are drawn."""
    page = open_page(driver, home_assistant, tokens, path)
    page.find("nav.tabs button[data-tab]")
    return page


def add_server(
    home_assistant: HomeAssistantProcess, tokens: Tokens, stand_in: LlamaServerStandIn
) -> str:
    """Add a llama-server entry through the config flow; its entry id."""
    flow = home_assistant.request(
        "POST",
        "/api/config/config_entries/flow",
        {"handler": "desktop_assistant", "show_advanced_options": False},
        tokens.access_token,
    )
    result = home_assistant.request(
        "POST",
        f"/api/config/config_entries/flow/{flow['flow_id']}",
        {"url": stand_in.url, "api_key": ""},
        tokens.access_token,
    )
    assert result["type"] == "create_entry", result
    return result["result"]["entry_id"]


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """{"a": {"b": "text"}} as {"a.b": "text"}, as the panel reads it."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[prefix + key] = value
    return flat


def panel_strings(language: str) -> dict[str, str]:
    """The panel's text in a language."""
    path = INTEGRATION / "frontend" / "translations" / f"{language}.json"
    return flatten(json.loads(path.read_text(encoding="utf-8")))


# The groups of the panel's text keys: `jobs` of `jobs.when`.
GROUPS = sorted({key.split(".")[0] for key in panel_strings("en") if "." in key})
# A key shown as it is written (`nightly.summary.trivial`), or a value the
# text was not given (`{count}`).
UNRESOLVED = re.compile(rf"\b(?:{'|'.join(GROUPS)})\.[a-z_]+|\{{[a-z_]+\}}")


# Chat's own page.
CHAT = "/desktop-assistant-chat"


def type_message(page: Page, text: str) -> None:
    """Type into the thread's box and send, as a person does."""
    box = page.find("[data-field=message]")
    box.send_keys(text)
    page.click("[data-action=send]")


def new_thread(page: Page, text: str) -> str:
    """Start a thread from the page; its id, from the URL it opens at."""
    page.click("[data-action=new-thread]")
    page.find("[data-filter=agent] button[aria-pressed=true]")
    type_message(page, text)

    def opened() -> str | None:
        thread_id = page.driver.current_url.rsplit("/", 1)[-1]
        return thread_id if thread_id.startswith("chat-") else None

    return page.wait_for(opened, what="the new thread's URL")


def open_constrained_server(
    driver: webdriver.Chrome,
    home_assistant: HomeAssistantProcess,
    tokens: Tokens,
    entry_id: str,
) -> Page:
    """The Servers page of a server whose agents call tools constrained.

    Its badge and detail say so and what it costs, with no `--jinja` advice:
    the template itself cannot render tools, whatever that flag.
    """
    page = open_panel(
        driver, home_assistant, tokens, f"/desktop-assistant/servers/{entry_id}"
    )
    badge = page.text(f"[data-server='{entry_id}'] [data-tool-calls=constrained]")
    assert badge == "constrained tool calls"
    said = page.text("[data-detail=server] [data-warning=constrained-tool-calls]")
    assert "hold their replies to a JSON schema" in said
    assert "two requests for a question that calls a tool" in said
    assert "--chat-template-file" in said
    assert "--jinja" not in said
    assert "constrained" in page.text("[data-detail=server] dl.facts")
    return page
