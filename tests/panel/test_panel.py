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


def conversation_rows(page: Page) -> list[str]:
    return page.attributes(
        "[data-list=conversations] li[data-conversation]", "data-conversation"
    )


def test_conversations_list_filter_search_open_delete(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    page = open_page(browser, home_assistant, admin_tokens, "/desktop-assistant")
    page.find("[data-conversation=film-night]")
    rows = conversation_rows(page)
    # Newest first, one page of 25, then the older ones on request.
    assert rows[:2] == ["film-night", "kitchen-weather"]
    assert len(rows) == 25
    page.find("[data-action=more]").click()
    page.wait_for(lambda: len(conversation_rows(page)) == 32, what="the second page")

    # Channel filter; paging keeps it.
    page.choose("[data-field=channel]", "voice")
    page.wait_for(lambda: conversation_rows(page) == ["kitchen-weather"], what="voice only")
    page.choose("[data-field=channel]", "")
    # Device filter.
    page.wait_for(lambda: page.find_all("[data-field=device] option[value=satellite-kitchen]"))
    page.choose("[data-field=device]", "satellite-kitchen")
    page.wait_for(lambda: conversation_rows(page) == ["kitchen-weather"], what="kitchen only")
    page.choose("[data-field=device]", "")
    # Full-text search: an argument value finds it, a tool result does not.
    search = page.find("[data-field=query]")
    search.send_keys("utrecht\n")
    page.wait_for(lambda: conversation_rows(page) == ["kitchen-weather"], what="search hit")
    search.clear()
    search.send_keys("drizzle\n")
    page.wait_for(lambda: page.find_all("[data-list=conversations] li.empty"), what="no hit in results")
    search.clear()
    search.send_keys("\n")
    page.find("[data-conversation=kitchen-weather]").click()

    detail = page.find("[data-detail=conversation] [data-entry=tool_call]")
    assert "desktop_assistant__weather" in detail.text
    assert '"place": "Utrecht"' in page.find("[data-field=arguments]").text
    assert "drizzle" in page.find("[data-field=result]").text
    assert "spoken" in page.find("[data-entry=user]").text
    page.screenshot(artifacts / "conversations.png")

    page.find("[data-conversation=film-night]").click()
    page.find("[data-detail=conversation] [data-mark=interrupted]")
    assert "cut off" in page.find("[data-entry=fault]").text

    # Delete asks first; cancel keeps it, confirm removes it.
    page.find("[data-action=delete]").click()
    page.find("[data-action=cancel]").click()
    assert "film-night" in conversation_rows(page)
    page.find("[data-action=delete]").click()
    page.find(".modal [data-action=confirm]").click()
    page.wait_for(lambda: "film-night" not in conversation_rows(page), what="the delete")
    gone = __import__("asyncio").run(
        home_assistant.websocket(
            admin_tokens.access_token,
            {"type": "desktop_assistant/conversations/get", "conversation_id": "film-night"},
        )
    )[0]
    assert gone["error"]["code"] == "not_found"
