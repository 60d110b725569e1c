"""The Assistant panel in a real browser against a real Home Assistant."""

from pathlib import Path

from selenium import webdriver

from .browser import Page
from .home_assistant import HomeAssistantProcess, Tokens

PANEL_ITEM = "#sidebar-panel-desktop-assistant"


def open_page(
    driver: webdriver.Chrome,
    home_assistant: HomeAssistantProcess,
    tokens: Tokens,
    path: str,
) -> Page:
    page = Page(driver, home_assistant.base_url)
    page.log_in(tokens.frontend_storage(home_assistant.base_url))
    page.open(path)
    return page


def test_panel_for_admin_only(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    member_tokens: Tokens,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    admin = open_page(browser, home_assistant, admin_tokens, "/desktop-assistant")
    admin.find("desktop-assistant-panel")
    assert admin.find(PANEL_ITEM).text.strip() == "Assistant"

    member = open_page(browser, home_assistant, member_tokens, "/desktop-assistant")
    member.find("#sidebar-panel-home")
    assert member.find_all(PANEL_ITEM) == []
    assert member.find_all("desktop-assistant-panel") == []
