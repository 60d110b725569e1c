"""Chat in a real browser: a household member's threads on the agent of a real Home Assistant.

One Home Assistant for the module (see conftest.py), its agent on the
llama-server stand-in; the member (not an administrator) uses Chat from the
sidebar. The tool call runs a tool file whose output is markup.
"""

from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver

from tests.harness.browser import PHONE_WIDTH, Page, phone
from tests.harness.home_assistant_process import HomeAssistantProcess, Tokens
from tests.harness.llama_server import (
    LlamaServerStandIn,
    Reply,
    chunk,
    sse,
    text_reply,
    tool_call_reply,
)

from .helpers import CHAT, new_thread, open_page, type_message, websocket

HOSTILE_TOOL = """\
description = "Look something up."
command = ["echo", "<script>window.hostileRan = true</script> <b>found</b>"]
"""
# Its name as the LLM API of tool files offers it.
TOOL = "desktop_assistant__lookup"
HOSTILE_ANSWER = (
    "Here is **bold** and <img src=x onerror='window.hostileRan = true'>"
    " [[Page|link]] <script>window.hostileRan = true</script>"
)
WIDTHS = """
const main = arguments[0].shadowRoot.querySelector("main");
return [main.scrollWidth, document.documentElement.scrollWidth, innerWidth];
"""


# Autouse: set up with the module's first test, while its sockets are open
# (a module fixture first asked for by a later test finds them blocked).
@pytest.fixture(scope="module", autouse=True)
def lookup_tool(
    home_assistant: HomeAssistantProcess, integration: str, admin_tokens: Tokens
) -> None:
    """A tool file whose output is markup, loaded."""
    folder = home_assistant.config_dir / "desktop_assistant" / "tools"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lookup.toml").write_text(HOSTILE_TOOL)
    websocket(home_assistant, admin_tokens, type="desktop_assistant/tools/reload")


def open_chat(
    driver: webdriver.Chrome,
    home_assistant: HomeAssistantProcess,
    tokens: Tokens,
    path: str = CHAT,
) -> Page:
    """Chat at a path, once its list is drawn."""
    page = open_page(driver, home_assistant, tokens, path)
    page.find("[data-list=threads]")
    return page


def streaming_forever(text: str, more: str) -> Reply:
    """An answer that begins with `text` and keeps adding `more` until stopped."""
    return Reply(
        events=[
            sse(chunk({"role": "assistant", "content": None})),
            sse(chunk({"content": text})),
        ],
        trickle=sse(chunk({"content": more})),
        trickle_every=0.2,
    )


def test_an_answer_streams_and_a_tool_call_settles_with_markup_as_text(
    home_assistant: HomeAssistantProcess,
    member_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
    lookup_tool: None,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    llama_stand_in.script[:] = [
        tool_call_reply((TOOL, "{}")),
        streaming_forever(HOSTILE_ANSWER, " more"),
    ]
    page = open_chat(browser, home_assistant, member_tokens)
    new_thread(page, "Look it up")
    settled = page.find("[data-entry=tool_call][data-state=done]")
    assert settled.get_attribute("open") is None  # collapsed
    page.find("[data-entry=assistant][data-live]")
    first = page.text("[data-entry=assistant][data-live]")
    page.wait_for(
        lambda: len(page.text("[data-entry=assistant][data-live]")) > len(first),
        what="the answer to grow as it streams",
    )
    # Markdown renders; markup in the answer and the tool's result is text.
    assert page.text("[data-entry=assistant] strong") == "bold"
    assert "<img src=x" in page.text("[data-entry=assistant][data-live]")
    page.click("[data-entry=tool_call] summary")
    assert "<script>" in page.text("[data-entry=tool_call] [data-field=result]")
    assert page.find_all("[data-entries] img, [data-entries] b") == []
    assert browser.execute_script("return window.hostileRan === undefined")
    page.screenshot(artifacts / "chat-streaming-1280.png")

    page.click("[data-action=stop]")
    page.find("[data-entry=fault]")
    assert page.find_all("[data-entry=assistant][data-live]") == []
    # The recorded call, collapsed again; its result still text.
    result = page.find("[data-entry=tool_call] [data-field=result]")
    assert "<script>" in result.get_attribute("textContent")
    assert browser.execute_script("return window.hostileRan === undefined")


def test_a_reload_mid_answer_finds_it_finished(
    home_assistant: HomeAssistantProcess,
    member_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
    lookup_tool: None,
    browser: webdriver.Chrome,
) -> None:
    llama_stand_in.script[:] = [
        tool_call_reply((TOOL, "{}")),
        text_reply("Found it ", "after all.", delay=4.0),
    ]
    page = open_chat(browser, home_assistant, member_tokens)
    thread_id = new_thread(page, "Slow question")
    page.find("[data-entry=tool_call][data-state=done]")
    browser.refresh()
    page.find("[data-entry=user]")
    answer = page.wait_for(
        lambda: [
            e.text
            for e in page.find_all("[data-entry=assistant]:not([data-live])")
            if "after all" in e.text
        ],
        what="the finished answer",
    )
    assert answer[0].startswith("Found it after all.")
    thread = websocket(
        home_assistant,
        member_tokens,
        type="desktop_assistant/chat/get",
        thread_id=thread_id,
    )
    assert "entries" in thread, thread
    assert [e["kind"] for e in thread["entries"]] == [
        "user",
        "tool_call",
        "assistant",
    ]


def test_a_thread_resumed_after_a_restart_carries_its_history(
    home_assistant: HomeAssistantProcess,
    member_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
    lookup_tool: None,
    browser: webdriver.Chrome,
) -> None:
    llama_stand_in.script[:] = [
        tool_call_reply((TOOL, "{}")),
        text_reply("The lookup found it."),
    ]
    page = open_chat(browser, home_assistant, member_tokens)
    thread_id = new_thread(page, "Before the restart")
    page.wait_for(
        lambda: "The lookup found it." in page.text("[data-entries]"), what="answer"
    )
    home_assistant.stop()
    home_assistant.start("/manifest.json")
    # Its HTTP server answers before the integrations are set up.
    page.wait_for(
        lambda: (
            websocket(home_assistant, member_tokens, type="get_config")["state"]
            == "RUNNING"
        ),
        timeout=120,
        what="Home Assistant to run",
    )
    llama_stand_in.script[:] = [text_reply("Still here.")]
    page = open_chat(browser, home_assistant, member_tokens, f"{CHAT}/{thread_id}")
    page.wait_for(lambda: "Before the restart" in page.text("[data-entries]"))
    type_message(page, "After the restart")
    page.wait_for(lambda: "Still here." in page.text("[data-entries]"), what="answer")
    contents = [m["content"] for m in llama_stand_in.chat_requests[-1]["messages"]]
    assert "Before the restart" in contents
    assert "The lookup found it." in contents
    # The earlier tool call's result, from the record.
    assert any("<b>found</b>" in content for content in contents)
    assert contents[-1].startswith("After the restart")


def test_chat_fits_a_phone(
    home_assistant: HomeAssistantProcess,
    member_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
    lookup_tool: None,
    artifacts: Path,
) -> None:
    llama_stand_in.script[:] = [
        tool_call_reply((TOOL, "{}")),
        text_reply("A long_word_without_any_break_" * 8),
    ]
    storage = member_tokens.frontend_storage(home_assistant.base_url)
    with phone(home_assistant.base_url, storage, dark=False) as page:
        page.open(CHAT)
        page.find("[data-list=threads]")
        new_thread(page, "On the phone")
        # The answer as the record keeps it, drawn once the turn ended.
        page.find("[data-entry=assistant]:not([data-live]) [data-field=served-by]")
        chat = page.find("desktop-assistant-chat")
        main, document, screen = page.driver.execute_script(WIDTHS, chat)
        assert max(main, document) <= screen == PHONE_WIDTH
        page.screenshot(artifacts / "chat-390.png")
        assert all(
            button.rect["x"] + button.rect["width"] <= PHONE_WIDTH
            for button in page.find_all(
                "[data-action=send], [data-action=back-to-list]"
            )
        )


def test_members_see_chat_in_the_sidebar_but_not_the_panel(
    home_assistant: HomeAssistantProcess, integration: str, member_tokens: Tokens
) -> None:
    panels: dict[str, Any] = websocket(home_assistant, member_tokens, type="get_panels")
    assert panels["desktop-assistant-chat"]["require_admin"] is False
    # The Assistant panel is not among a member's panels.
    assert "desktop-assistant" not in panels


def test_an_admin_opens_a_members_thread_from_conversations(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    member_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
    lookup_tool: None,
    browser: webdriver.Chrome,
) -> None:
    llama_stand_in.script[:] = [text_reply("Soup tonight.")]
    answer = websocket(
        home_assistant,
        member_tokens,
        type="desktop_assistant/chat/send",
        agent_id=websocket(
            home_assistant, member_tokens, type="desktop_assistant/chat/agents"
        )["agents"][0]["agent_id"],
        text="Dinner plans?",
    )
    thread_id = answer["thread_id"]
    page = open_page(
        browser,
        home_assistant,
        admin_tokens,
        f"/desktop-assistant/conversations/{thread_id}",
    )
    page.wait_for(
        lambda: "Soup tonight." in page.text("[data-detail=conversation]"),
        what="the transcript",
    )
    page.click("[data-action=open-in-chat]")
    page.wait_for(
        lambda: "Soup tonight." in page.text("[data-entries]"), what="the thread"
    )
    assert browser.current_url.endswith(f"{CHAT}/{thread_id}")
    # Read, not continued: no box to type in.
    assert page.find_all("[data-field=message]") == []
