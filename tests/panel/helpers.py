"""What the browser tests of the panel share: opening it as a user, a command."""

import asyncio
from typing import Any

from selenium import webdriver

from tests.harness.browser import Page

from .home_assistant import HomeAssistantProcess, Tokens


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
