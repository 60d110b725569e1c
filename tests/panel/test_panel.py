"""The Assistant panel in a real browser against a real Home Assistant."""

import json
from pathlib import Path
import time
from typing import Any

from selenium import webdriver

from tests.harness.browser import PHONE_WIDTH, Page, luminance, phone
from tests.harness.home_assistant_process import HomeAssistantProcess, Tokens
from tests.harness.llama_server import LlamaServerStandIn, text_reply

from .helpers import open_page, websocket
from .seed import FILLER

PANEL_ITEM = "#sidebar-panel-desktop-assistant"


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
    assert admin.text(PANEL_ITEM).strip() == "Assistant"

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
    page.click("[data-action=more]")
    page.wait_for(
        lambda: len(conversation_rows(page)) == FILLER + 2, what="the second page"
    )

    # Channel filter (buttons, not a native select); paging keeps it.
    page.click("[data-filter=channel] [data-value=voice]")
    page.wait_for(
        lambda: conversation_rows(page) == ["kitchen-weather"], what="voice only"
    )
    assert page.attributes(
        "[data-filter=channel] [aria-pressed=true]", "data-value"
    ) == ["voice"]
    page.click("[data-filter=channel] [data-value='']")
    # Device filter.
    page.click("[data-filter=device] [data-value=satellite-kitchen]")
    page.wait_for(
        lambda: conversation_rows(page) == ["kitchen-weather"], what="kitchen only"
    )
    page.click("[data-filter=device] [data-value='']")
    # Full-text search: an argument value finds it, a tool result does not.
    search = page.find("[data-field=query]")
    search.send_keys("utrecht\n")
    page.wait_for(
        lambda: conversation_rows(page) == ["kitchen-weather"], what="search hit"
    )
    search.clear()
    search.send_keys("drizzle\n")
    page.wait_for(
        lambda: page.find_all("[data-list=conversations] li.empty"),
        what="no hit in results",
    )
    search.clear()
    search.send_keys("\n")
    page.wait_for(lambda: len(conversation_rows(page)) == 25, what="all again")
    page.wait_for(
        lambda: page.click("[data-conversation=kitchen-weather]") or True,
        what="a click on the kitchen conversation",
    )

    detail = page.find("[data-detail=conversation] [data-entry=tool_call]")
    assert "desktop_assistant__weather" in detail.text
    assert '"place": "Utrecht"' in page.text("[data-field=arguments]")
    assert "drizzle" in page.text("[data-field=result]")
    assert "spoken" in page.text("[data-entry=user]")
    # Which agent answered, said in words (by its name while it exists).
    assert page.text("[data-detail=conversation] [data-field=agent]").startswith(
        "answered by "
    )
    page.screenshot(artifacts / "conversations.png")

    # Someone deleted it elsewhere meanwhile: a sentence says so.
    page.click("[data-conversation=filler-00]")
    page.find("[data-detail=conversation] [data-entry=user]")
    websocket(
        home_assistant,
        admin_tokens,
        type="desktop_assistant/conversations/delete",
        conversation_id="filler-00",
    )
    page.click("[data-action=delete]")
    page.click(".modal [data-action=confirm]")
    assert "no longer there" in page.text(".error-bar")

    page.click("[data-conversation=film-night]")
    page.find("[data-detail=conversation] [data-mark=interrupted]")
    assert "cut off" in page.text("[data-entry=fault]")
    # Delete asks first; cancel keeps it, confirm removes it.
    page.click("[data-action=delete]")
    page.click("[data-action=cancel]")
    assert "film-night" in conversation_rows(page)
    page.click("[data-action=delete]")
    page.click(".modal [data-action=confirm]")
    page.wait_for(
        lambda: "film-night" not in conversation_rows(page), what="the delete"
    )
    gone = websocket(
        home_assistant,
        admin_tokens,
        type="desktop_assistant/conversations/get",
        conversation_id="film-night",
    )
    assert gone["error"]["code"] == "not_found"


def page_named(home_assistant: HomeAssistantProcess, tokens: Tokens, name: str) -> Any:
    listed = websocket(
        home_assistant, tokens, type="desktop_assistant/memory/pages/list"
    )
    (summary,) = [page for page in listed["pages"] if page["name"] == name]
    return websocket(
        home_assistant,
        tokens,
        type="desktop_assistant/memory/pages/get",
        page_id=summary["page_id"],
    )


def page_text(page: Page) -> str:
    return page.text("[data-detail=page] [data-field=page-text]")


def open_memory_page(page: Page, name: str) -> None:
    page.click(f"[data-list=pages] [data-page='{name}']")
    page.wait_for(
        lambda: page.text("[data-field=page-name]") == name, what=f"page {name}"
    )


def test_memory_pages_links_edit_history_rename_delete(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    page = open_page(browser, home_assistant, admin_tokens, "/desktop-assistant")
    page.click("[data-tab=memory]")
    budget = page.text("[data-profile] [data-field=budget]")
    assert "within budget" in budget
    assert "of 800 tokens" in budget

    # A page rendered from markdown, with links, a dangling link and backlinks.
    open_memory_page(page, "Anouk")
    assert "Birthday is 3 November" in page_text(page)
    assert page.text("[data-field=page-text] strong") == "strong"
    assert page.find("[data-backlink=Sara]")
    page.screenshot(artifacts / "memory.png")
    page.click("[data-link=Sara]")
    page.wait_for(lambda: page.text("[data-field=page-name]") == "Sara")
    page.click("[data-backlink=Anouk]")
    page.wait_for(lambda: page.text("[data-field=page-name]") == "Anouk")
    dangling = page.find("[data-link=Utrecht]")
    assert "dangling" in dangling.get_attribute("class")
    dangling.click()
    assert page.find("[data-field=name]").get_attribute("value") == "Utrecht"
    page.find("[data-detail=page] [data-field=text]").send_keys("A city with canals.")
    page.click("[data-action=save]")
    page.wait_for(lambda: page.text("[data-field=page-name]") == "Utrecht")
    assert "canals" in page_text(page)
    assert page.find("[data-backlink=Anouk]")

    # Edit while someone else changes the page: warned, nothing typed lost.
    open_memory_page(page, "Anouk")
    page.click("[data-action=edit]")
    editor = page.find("[data-detail=page] [data-field=text]")
    editor.send_keys("\n- 2026-11-20: Moved to a new flat")
    current = page_named(home_assistant, admin_tokens, "Anouk")
    websocket(
        home_assistant,
        admin_tokens,
        type="desktop_assistant/memory/pages/update",
        page_id=current["page_id"],
        base_revision=current["revision"],
        text=current["text"] + "- 2026-11-21: Someone else's note\n",
    )
    page.click("[data-action=save]")
    page.find("[data-warning=changed]")
    assert "Moved to a new flat" in page.find(
        "[data-detail=page] [data-field=text]"
    ).get_attribute("value")
    page.click("[data-action=overwrite]")
    page.wait_for(lambda: "Moved to a new flat" in page_text(page), what="overwrite")
    assert "Someone else's note" not in page_text(page)

    # History: a diff per revision, and an earlier version restored.
    page.click("[data-action=history]")
    page.wait_for(lambda: page.find_all("[data-revision] .diff-line.added"))
    added = [line.text for line in page.find_all("[data-revision] .diff-line.added")]
    assert any("Moved to a new flat" in line for line in added)
    assert any("Someone else's note" in line for line in added)
    page.click("[data-action=restore-revision]")
    page.wait_for(lambda: "Someone else's note" in page_text(page), what="restore")
    assert "Moved to a new flat" not in page_text(page)

    # Rename keeps the old name as an alias.
    open_memory_page(page, "Old bike")
    page.click("[data-action=rename]")
    name = page.find("[data-field=new-name]")
    name.clear()
    name.send_keys("Red bike")
    page.click("[data-action=save-name]")
    page.wait_for(lambda: page.text("[data-field=page-name]") == "Red bike")
    assert "also: Old bike" in page.text("[data-detail=page] .meta")

    # A name taken by another page is refused in a sentence; the typing stays.
    open_memory_page(page, "Sara")
    page.click("[data-action=rename]")
    name = page.find("[data-field=new-name]")
    name.clear()
    name.send_keys("nouk")
    page.click("[data-action=save-name]")
    assert "already has that name" in page.text("[data-detail=page] .error-bar")
    assert page.find("[data-field=new-name]").get_attribute("value") == "nouk"

    # Delete to recently deleted, restore, then delete forever by typing the name.
    open_memory_page(page, "Red bike")
    page.click("[data-detail=page] [data-action=delete]")
    page.click(".modal [data-action=confirm]")
    page.click("[data-deleted='Red bike'] [data-action=restore]")
    page.wait_for(lambda: page.find_all("[data-list=pages] [data-page='Red bike']"))
    open_memory_page(page, "Red bike")
    page.click("[data-detail=page] [data-action=delete]")
    page.click(".modal [data-action=confirm]")
    page.click("[data-deleted='Red bike'] [data-action=delete-forever]")
    confirm = page.find(".modal [data-action=confirm]")
    assert not confirm.is_enabled()
    page.find(".modal [data-field=confirm-name]").send_keys("Red bik")
    assert not confirm.is_enabled()
    page.find(".modal [data-field=confirm-name]").send_keys("e")
    assert confirm.is_enabled()
    confirm.click()
    page.wait_for(lambda: not page.find_all("[data-deleted='Red bike']"), what="gone")
    listed = websocket(
        home_assistant, admin_tokens, type="desktop_assistant/memory/pages/list"
    )
    assert "Red bike" not in [
        each["name"] for each in listed["pages"] + listed["deleted"]
    ]


def test_markup_in_a_page_is_shown_as_text_and_never_run(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
) -> None:
    page = open_page(browser, home_assistant, admin_tokens, "/desktop-assistant")
    page.click("[data-tab=memory]")
    open_memory_page(page, "Hostile paste")
    text = page_text(page)
    assert '<img src=x onerror="window.hostileRan = true">' in text
    assert "<script>window.hostileRan = true</script>" in text
    assert page.find_all("[data-field=page-text] img") == []
    assert page.find_all("[data-field=page-text] script") == []
    assert browser.execute_script("return window.hostileRan === undefined")


GARDEN_TIDY = "The garden is behind the house. Tomatoes planted in May.\n"


def notes_for(body: dict[str, Any]) -> dict[str, Any]:
    """The model's notes: one fact from the kitchen conversation, none elsewhere."""
    transcript = body["messages"][-1]["content"]
    if "Utrecht" not in transcript:
        return {"notes": []}
    return {
        "notes": [{"page": "Utrecht", "type": "place", "fact": "Rain is common there"}]
    }


def tidy_garden(body: dict[str, Any]) -> dict[str, Any]:
    """The model's plan: fold the garden's notes, declaring the dropped line."""
    return {
        "rewrite": [
            {
                "page": "Garden",
                "text": GARDEN_TIDY,
                "dropped": [
                    {"line": "- 2026-11-06: The hose leaks", "reason": "fixed since"}
                ],
            }
        ],
        "create": [],
        "merge": [],
    }


def test_nightly_run_diff_sources_and_revert(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    # The pass asks for `notes` once per conversation it reads, a `plan` once.
    answers = {"notes": notes_for, "plan": tidy_garden}
    llama_stand_in.reply_to = lambda body: text_reply(
        json.dumps(answers[body["response_format"]["json_schema"]["name"]](body))
    )
    # The record marks a conversation quiet within a minute of HA's start.
    kitchen = {"status": None}
    deadline = time.monotonic() + 120
    while kitchen["status"] != "quiet" and time.monotonic() < deadline:
        time.sleep(2)
        kitchen = websocket(
            home_assistant,
            admin_tokens,
            type="desktop_assistant/conversations/get",
            conversation_id="kitchen-weather",
        )
    assert kitchen["status"] == "quiet"

    page = open_page(browser, home_assistant, admin_tokens, "/desktop-assistant")
    page.click("[data-tab=nightly]")
    page.find("[data-list=runs] li.empty")
    page.click("[data-action=run-now]")
    page.click("[data-list=runs] li[data-run]", timeout=60)

    garden = page.find("[data-run-page=Garden]")
    assert "- - 2026-11-06: The hose leaks" in garden.text
    assert "+ " + GARDEN_TIDY.strip() in garden.text
    assert "fixed since" in page.text("[data-run-page=Garden] [data-field=dropped]")
    page.find("[data-run-page=Utrecht] [data-source=kitchen-weather]")
    page.screenshot(artifacts / "nightly.png")

    # Retention (or a person) removed the source: the run says it is gone.
    websocket(
        home_assistant,
        admin_tokens,
        type="desktop_assistant/conversations/delete",
        conversation_id="kitchen-weather",
    )
    page.click("[data-list=runs] li[data-run]")
    page.wait_for(
        lambda: (
            page.text("[data-run-page=Utrecht] [data-source=kitchen-weather]") == "gone"
        ),
        what="the gone mark",
    )

    page.click("[data-run-page=Garden] [data-action=revert]")
    page.wait_for(
        lambda: page_named(home_assistant, admin_tokens, "Garden")["text"].startswith(
            "The garden is behind the house.\n\n## Notes"
        ),
        what="the revert",
    )
    assert page.text("[data-run-page=Garden] .badge")


def test_dark_mode_on_a_phone(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    artifacts: Path,
) -> None:
    storage = admin_tokens.frontend_storage(home_assistant.base_url)
    with phone(home_assistant.base_url, storage, dark=True) as page:
        driver = page.driver
        page.open("/desktop-assistant")
        panel = page.find("desktop-assistant-panel")
        page.click("[data-list=conversations] li[data-conversation]")
        page.find("[data-detail=conversation] [data-entry=user]")
        background = page.wait_for(
            lambda: (
                luminance(
                    driver.execute_script(
                        "return getComputedStyle(arguments[0]).backgroundColor", panel
                    )
                )
                < 0.2
            ),
            what="a dark background",
        )
        assert background
        # One column: the transcript takes the screen, with a way back.
        detail = page.find("[data-detail=conversation]").rect
        assert not page.find("[data-list=conversations]").is_displayed()
        assert driver.execute_script("return window.innerWidth") == PHONE_WIDTH
        assert detail["x"] + detail["width"] <= PHONE_WIDTH
        page.screenshot(artifacts / "phone-dark.png")
        page.click("[data-detail=conversation] [data-action=back-to-list]")
        page.wait_for(
            lambda: page.find("[data-list=conversations]").is_displayed(),
            what="the list again",
        )
        assert driver.current_url.endswith("/desktop-assistant/conversations")
