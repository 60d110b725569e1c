"""Every view in every language, at a desk's and a phone's width, in a real browser.

One Home Assistant for the module (see conftest.py), with a run of each job,
a tool's run, a question the agent answered, and a second server whose model
id is a long path with no break point.
"""

from collections.abc import Iterator
from functools import partial
import json
from pathlib import Path
import sqlite3
import time
from typing import Any

import pytest
from selenium import webdriver

from custom_components.desktop_assistant.const import DOMAIN
from custom_components.desktop_assistant.store import DB_FILE
from tests.harness.browser import PHONE_WIDTH, Page, phone
from tests.harness.home_assistant_process import HomeAssistantProcess, Tokens
from tests.harness.hostile_server import HostileLlamaServer
from tests.harness.llama_server import MODEL_ID, LlamaServerStandIn, Reply, text_reply
from tests.harness.ports import free_port

from .conftest import ADMIN, StandInThread
from .helpers import (
    LANGUAGES,
    NAVIGATE,
    UNRESOLVED,
    add_server,
    open_constrained_server,
    open_panel,
    panel_strings,
    websocket,
)

LONG_MODEL = (
    "/srv/llama/models/" + "Qwen3_30B_A3B_Instruct_2507_UD_Q4_K_XL_" * 3 + "imat.gguf"
)
ECHO = """\
description = "Say the text back."
command = ["echo", "{text}"]
[params.text]
type = "string"
description = "What to say."
"""
RECORD_WAIT = 60.0


# Every text and hover text the panel shows, its style sheet left out.
PANEL_TEXT = """
const found = [];
const walker = document.createTreeWalker(arguments[0].shadowRoot, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  if (node.nodeType === Node.TEXT_NODE) {
    if (node.parentElement.tagName !== "STYLE") found.push(node.data);
  } else {
    for (const name of ["title", "placeholder", "aria-label"]) {
      if (node.hasAttribute(name)) found.push(node.getAttribute(name));
    }
  }
}
return found.join("\\n");
"""

# Each word of the tables' cells, and those the browser split over two lines.
TABLE_WORDS = """
const words = [];
const broken = [];
for (const cell of arguments[0].shadowRoot.querySelectorAll("table.runs th, table.runs td")) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
      words.push(match[0]);
      if (lines.size > 1) broken.push(match[0]);
    }
  }
}
return { words, broken };
"""

# How wide the panel's content and the page are, against the screen.
WIDTHS = """
const main = arguments[0].shadowRoot.querySelector("main");
return [main.scrollWidth, document.documentElement.scrollWidth, innerWidth];
"""

# A theme colour as the browser computes it, to compare with an element's.
THEME_COLOR = """
const probe = document.createElement("div");
probe.style.color = `var(${arguments[1]})`;
arguments[0].shadowRoot.append(probe);
const color = getComputedStyle(probe).color;
probe.remove();
return color;
"""


# How an element looks: its colours, its borders' colours and its text.
LOOK = """
const style = getComputedStyle(arguments[0]);
return [style.backgroundColor, style.color, style.borderTopColor, style.borderLeftColor, arguments[0].textContent];
"""


def answer(body: dict[str, Any]) -> Reply:
    """The stand-in model: the nightly pass's JSON, a sentence for a question."""
    if response_format := body.get("response_format"):
        name = response_format["json_schema"]["name"]
        plan = {"rewrite": [], "create": [], "merge": []}
        return text_reply(json.dumps({"notes": []} if name == "notes" else plan))
    return text_reply("It stays dry in Utrecht today.")


def set_server_options(
    home_assistant: HomeAssistantProcess, tokens: Tokens, entry_id: str
) -> None:
    """Give the server a MAC address on its Configure menu's Server page."""
    base = "/api/config/config_entries/options/flow"
    token = tokens.access_token
    flow = home_assistant.request("POST", base, {"handler": entry_id}, token)
    path = f"{base}/{flow['flow_id']}"
    home_assistant.request("POST", path, {"next_step_id": "server"}, token)
    result = home_assistant.request(
        "POST",
        path,
        {
            "connect_timeout": 3,
            "wake_mac": "aa:bb:cc:dd:ee:ff",
            "wake_address": "127.0.0.1",
            "wake_port": free_port(),
            "wake_wait": 0,
            "nightly_fallback": False,
        },
        token,
    )
    assert result["type"] == "create_entry", result


@pytest.fixture(scope="module")
def long_model_server(
    home_assistant: HomeAssistantProcess, integration: str, admin_tokens: Tokens
) -> Iterator[dict[str, str]]:
    """A second server, with a MAC, whose model id has no break point."""
    with StandInThread() as stand_in:
        stand_in.model_id = LONG_MODEL
        entry_id = add_server(home_assistant, admin_tokens, stand_in)
        set_server_options(home_assistant, admin_tokens, entry_id)
        yield {"entry_id": entry_id, "url": stand_in.url}


def recorded_reply(
    home_assistant: HomeAssistantProcess, tokens: Tokens, conversation_id: str
) -> dict[str, Any]:
    """The conversation's reply once the record has written it."""
    deadline = time.monotonic() + RECORD_WAIT
    while time.monotonic() < deadline:
        kept = websocket(
            home_assistant,
            tokens,
            type="desktop_assistant/conversations/get",
            conversation_id=conversation_id,
        )
        replies = [e for e in kept.get("entries", []) if e["kind"] == "assistant"]
        if replies:
            return replies[0]
        time.sleep(0.5)
    raise AssertionError(f"the record kept no reply in {conversation_id}")


@pytest.fixture(scope="module")
def household(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    llama_stand_in: LlamaServerStandIn,
    long_model_server: dict[str, str],
) -> dict[str, Any]:
    """What the views show: runs of each job and a tool, an answered question."""
    llama_stand_in.reply_to = answer
    command = partial(websocket, home_assistant, admin_tokens)
    tools = home_assistant.config_dir / "desktop_assistant" / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    (tools / "echo.toml").write_text(ECHO)
    command(type="desktop_assistant/tools/reload")
    command(
        type="desktop_assistant/tools/run",
        tool="echo",
        arguments={"text": "Extraordinarily long words stay whole"},
    )
    for job in ("nightly", "retention"):
        assert "outcome" in command(type="desktop_assistant/jobs/run_now", job=job)
    servers = command(type="desktop_assistant/servers/list")["servers"]
    (first,) = [server for server in servers if server["entry_id"] == integration]
    asked = home_assistant.request(
        "POST",
        "/api/conversation/process",
        {
            "text": "Will it rain in Utrecht?",
            "agent_id": first["agents"][0]["entity_id"],
            "language": "en",
        },
        admin_tokens.access_token,
    )
    conversation_id = asked["conversation_id"]
    recorded_reply(home_assistant, admin_tokens, conversation_id)
    (run,) = command(type="desktop_assistant/memory/runs/list", limit=1)["runs"]
    pages = command(type="desktop_assistant/memory/pages/list")["pages"]
    (anouk,) = [page["page_id"] for page in pages if page["name"] == "Anouk"]
    return {
        "conversation": conversation_id,
        "run": run["id"],
        "anouk": anouk,
        "first_title": first["title"],
    } | long_model_server


def walk(household: dict[str, Any]) -> list[tuple[str, str]]:
    """A path of every view with an item open, and what shows once it is drawn."""
    return [
        (
            f"conversations/{household['conversation']}",
            "[data-detail=conversation] [data-field=served-by]",
        ),
        (f"memory/{household['anouk']}", "[data-field=page-name]"),
        (f"nightly/run-{household['run']}", "[data-detail=run] h2"),
        ("tools/echo", "[data-list=tool-runs] [data-run]"),
        ("jobs/nightly", "[data-job=nightly].selected"),
        (
            f"servers/{household['entry_id']}",
            "[data-detail=server] [data-field=model-path]",
        ),
        ("jobs/retention", "[data-job=retention].selected"),
    ]


def set_language(
    home_assistant: HomeAssistantProcess, tokens: Tokens, language: str
) -> None:
    """The language of the user's profile, as its settings page sets it."""
    websocket(
        home_assistant,
        tokens,
        type="frontend/set_user_data",
        key="language",
        value={
            "language": language,
            "number_format": "language",
            "time_format": "language",
        },
    )


def go(page: Page, path: str, ready: str) -> Any:
    """Follow a link of the panel; the panel element once the view is drawn."""
    page.driver.execute_script(NAVIGATE, f"/desktop-assistant/{path}")
    page.find(ready)
    return page.find("desktop-assistant-panel")


def test_no_view_shows_a_key_in_any_language(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
) -> None:
    try:
        for language in LANGUAGES:
            set_language(home_assistant, admin_tokens, language)
            page = open_panel(browser, home_assistant, admin_tokens)
            jobs = panel_strings(language)["tabs.jobs"]
            page.wait_for(
                lambda: page.text("[data-tab=jobs]") == jobs,  # noqa: B023
                what=f"the tabs in {language}",
            )
            for path, ready in walk(household):
                panel = go(page, path, ready)
                shown = browser.execute_script(PANEL_TEXT, panel)
                unresolved = UNRESOLVED.findall(shown)
                assert not unresolved, (language, path, unresolved)
    finally:
        set_language(home_assistant, admin_tokens, "en")


def assert_tables_keep_words(page: Page, artifacts: Path) -> int:
    """The Jobs and Tools tables break no word, and the page fits the screen.

    The screen's width is returned; a screenshot of each table is kept.
    """
    for path, ready in (
        ("jobs/nightly", "[data-list=job-runs] [data-run]"),
        ("tools/echo", "[data-list=tool-runs] [data-run]"),
    ):
        panel = go(page, path, ready)
        measured = page.driver.execute_script(TABLE_WORDS, panel)
        assert len(measured["words"]) > 10, measured
        assert measured["broken"] == [], (path, measured["broken"])
        main, document, screen = page.driver.execute_script(WIDTHS, panel)
        assert max(main, document) <= screen, (path, main, document)
        page.screenshot(artifacts / f"views-{path.replace('/', '-')}-{screen}.png")
    return screen


def test_tables_never_break_a_word(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    page = open_panel(browser, home_assistant, admin_tokens)
    assert assert_tables_keep_words(page, artifacts) == 1280
    storage = admin_tokens.frontend_storage(home_assistant.base_url)
    with phone(home_assistant.base_url, storage, dark=False) as small:
        small.open("/desktop-assistant")
        small.find("nav.tabs button[data-tab]")
        assert assert_tables_keep_words(small, artifacts) == PHONE_WIDTH


def test_an_outcome_looks_the_same_on_every_page(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
) -> None:
    page = open_panel(browser, home_assistant, admin_tokens)
    looks = []
    for path, chip in (
        ("jobs/retention", "[data-list=job-runs] [data-outcome=ok]"),
        ("jobs/retention", "[data-job=retention] [data-outcome=ok]"),
        ("tools/echo", "[data-list=tool-runs] [data-outcome=ok]"),
    ):
        panel = go(page, path, chip)
        looks.append(browser.execute_script(LOOK, page.find(chip)))
    assert looks[0] == looks[1] == looks[2], looks
    # Green, as a run that went well is everywhere in Home Assistant.
    assert looks[0][0] == browser.execute_script(THEME_COLOR, panel, "--success-color")


def test_a_link_to_a_nightly_run_by_its_old_id_opens_it(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
) -> None:
    # As the migration to the registry's ids leaves a run memory called 77.
    database = sqlite3.connect(home_assistant.config_dir / DOMAIN / DB_FILE, timeout=30)
    with database:
        database.execute(
            "INSERT OR REPLACE INTO nightly_run_moved (old, run) VALUES (77, ?)",
            (household["run"],),
        )
    database.close()
    page = open_panel(
        browser, home_assistant, admin_tokens, "/desktop-assistant/nightly/77"
    )
    page.find("[data-detail=run] h2")
    assert browser.current_url.endswith(f"/nightly/run-{household['run']}")


def test_a_phone_shows_every_tab_and_a_long_model_fits(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    artifacts: Path,
) -> None:
    storage = admin_tokens.frontend_storage(home_assistant.base_url)
    with phone(home_assistant.base_url, storage, dark=False) as page:
        page.open("/desktop-assistant/servers")
        server = f"[data-server='{household['entry_id']}']"
        model = page.find(f"{server} [data-field=model]")
        panel = page.find("desktop-assistant-panel")
        # The list names the model by its file; its path is the hover text.
        assert model.get_attribute("textContent") == LONG_MODEL.rsplit("/", 1)[1]
        assert model.get_attribute("title") == LONG_MODEL
        # The address once: it is the entry's title.
        listed = page.find(server).get_attribute("textContent")
        assert listed.count(household["url"]) == 1
        main, document, screen = page.driver.execute_script(WIDTHS, panel)
        assert max(main, document) <= screen == PHONE_WIDTH
        # Every tab shows whole, in rows, with nothing past the screen's edge.
        tabs = page.find_all("nav.tabs button[data-tab]")
        assert len(tabs) == 6
        for tab in tabs:
            assert tab.is_displayed()
            assert tab.rect["x"] >= 0
            assert tab.rect["x"] + tab.rect["width"] <= PHONE_WIDTH
        nav = page.find("nav.tabs")
        assert nav.get_property("scrollWidth") <= nav.get_property("clientWidth")
        page.screenshot(artifacts / "views-servers-390.png")
        page.click(server)
        page.find("[data-detail=server] [data-field=model-path]")
        main, document, screen = page.driver.execute_script(WIDTHS, panel)
        assert max(main, document) <= screen
        page.screenshot(artifacts / "views-server-390.png")


def test_the_transcript_names_the_server_and_model_that_answered(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    page = open_panel(
        browser,
        home_assistant,
        admin_tokens,
        f"/desktop-assistant/conversations/{household['conversation']}",
    )
    served = page.find("[data-entry=assistant] [data-field=served-by]")
    assert served.text == f"from {household['first_title']}, model {MODEL_ID}"
    # Whose it is: the administrator (Anouk) typed it through the API.
    owner = page.find("[data-detail=conversation] [data-field=owner]")
    assert owner.text == ADMIN[0].title()
    assert page.find("[data-filter=owner] [data-value=household]")
    page.screenshot(artifacts / "views-transcript-1280.png")


def test_waking_says_so_in_a_note_not_a_warning(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
) -> None:
    page = open_panel(
        browser,
        home_assistant,
        admin_tokens,
        f"/desktop-assistant/servers/{household['entry_id']}",
    )
    page.click("[data-detail=server] [data-action=wake]")
    woken = page.find("[data-notice=woken]")
    assert woken.text == "The wake-up packet was sent."
    panel = page.find("desktop-assistant-panel")
    warning = browser.execute_script(THEME_COLOR, panel, "--warning-color")
    look = browser.execute_script(LOOK, woken)
    assert warning not in look, look


def test_a_new_page_starts_at_its_name(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
) -> None:
    page = open_panel(
        browser, home_assistant, admin_tokens, "/desktop-assistant/memory"
    )
    page.click("[data-action=new-page]")
    page.find("[data-detail=page] [data-field=name]")
    panel = page.find("desktop-assistant-panel")
    focused = browser.execute_script(
        "return arguments[0].shadowRoot.activeElement.dataset.field", panel
    )
    assert focused == "name"


# The space between a tool's name (the item's first text) and its badge.
NAME_TO_BADGE = """
const [name, badge] = arguments;
const range = document.createRange();
range.selectNodeContents(name.firstChild);
return badge.getBoundingClientRect().left - range.getBoundingClientRect().right;
"""


def test_a_changing_tools_badge_stands_apart_from_its_name(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    household: dict[str, Any],
    browser: webdriver.Chrome,
) -> None:
    page = open_panel(browser, home_assistant, admin_tokens, "/desktop-assistant/tools")
    remember = "[data-group=memory] [data-tool=desktop_assistant__remember] > div"
    badge = page.find(f"{remember} [data-mark=changes]")
    gap = browser.execute_script(NAME_TO_BADGE, page.find(remember), badge)
    assert gap >= 2, gap
    # Dark text on the amber: white on it was hard to read.
    color = browser.execute_script("return getComputedStyle(arguments[0]).color", badge)
    assert color == "rgba(0, 0, 0, 0.87)", color


# llama-server's /props for a template that cannot render tools (SmolLM2's).
NO_TOOL_CALLS = {
    "total_slots": 1,
    "chat_template_caps": {"supports_tools": False, "supports_tool_calls": False},
}


def test_a_template_that_cannot_call_tools_shows_constrained_calls_and_their_cost(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    integration: str,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    token = admin_tokens.access_token
    served = StandInThread()
    served.stand_in = HostileLlamaServer(props_body=NO_TOOL_CALLS)
    with served as stand_in:
        base = "/api/config/config_entries/flow"
        flow = home_assistant.request(
            "POST", base, {"handler": "desktop_assistant"}, token
        )
        path = f"{base}/{flow['flow_id']}"
        result = home_assistant.request("POST", path, {"url": stand_in.url}, token)
        assert result["step_id"] == "tool_calls", result
        result = home_assistant.request("POST", path, {"tool_calls": "auto"}, token)
        entry_id = result["result"]["entry_id"]
        page = open_constrained_server(browser, home_assistant, admin_tokens, entry_id)
        page.screenshot(artifacts / "views-server-constrained.png")
        home_assistant.request(
            "DELETE", f"/api/config/config_entries/entry/{entry_id}", None, token
        )
