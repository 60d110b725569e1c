"""The Tools, Jobs and Servers pages, URLs, languages and large texts, in a real browser.

One Home Assistant for the module (see conftest.py); each test opens the
panel as an administrator.
"""

from collections.abc import Iterator
import json
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import Select

from tests.harness.browser import PHONE_WIDTH, luminance, phone
from tests.harness.home_assistant_process import HomeAssistantProcess, Tokens
from tests.harness.real_engines import (
    MISSING_SMOLLM2,
    SMOLLM2_MODEL,
    cached_model,
    start_llama_server,
)

from .conftest import StandInThread
from .helpers import (
    NAVIGATE,
    add_server,
    open_constrained_server,
    open_panel,
    websocket,
)

SECRET = "shop-token-7f3a9c"
CONFIG = f'[env]\nSHOP_TOKEN = "{SECRET}"\n'
SHOPPING = """\
description = "Put an item on the shopping list."
command = ["echo", "added {item}"]
changes = true
[params.item]
type = "string"
description = "What to buy."
[confirm]
en = "Put {item} on the shopping list?"
"""
ECHO = """\
description = "Say the text back."
command = ["echo", "{text}"]
[params.text]
type = "string"
description = "What to say."
"""
BROKEN = 'description = "No command"\ncommnd = ["echo"]\n'
HOSTILE = """\
description = "<img src=x onerror='window.hostileRan = true'> **not bold**"
command = ["echo", "<script>window.hostileRan = true</script>"]
"""


@pytest.fixture(scope="module")
def tools_folder(
    home_assistant: HomeAssistantProcess, integration: str, admin_tokens: Tokens
) -> Path:
    """The config folder's tools: a changing tool, an echo, a broken file."""
    folder = home_assistant.config_dir / "desktop_assistant"
    (folder / "tools").mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(CONFIG)
    (folder / "tools" / "shopping.toml").write_text(SHOPPING)
    (folder / "tools" / "echo.toml").write_text(ECHO)
    (folder / "tools" / "broken.toml").write_text(BROKEN)
    (folder / "tools" / "hostile.toml").write_text(HOSTILE)
    websocket(home_assistant, admin_tokens, type="desktop_assistant/tools/reload")
    return folder


def test_tools_page_install_try_it_and_history(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    tools_folder: Path,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    page = open_panel(browser, home_assistant, admin_tokens, "/desktop-assistant/tools")
    # The folder was written after start: Reload reads it, Install adds the examples.
    page.click("[data-action=reload-tools]")
    page.find("[data-notice=reloaded]")
    page.click("[data-action=install-examples]")
    notice = page.text("[data-notice=installed]")
    assert "already there" in notice  # config.toml was kept
    # Tools, not files, are what the list then shows: six examples.
    assert "6 tools installed" in notice
    page.find("[data-group=files] [data-tool=now]")
    tools = page.attributes("[data-group=files] [data-tool]", "data-tool")
    assert {"now", "weather", "calendar", "calendar_add", "shopping", "echo"} <= set(
        tools
    )
    broken = page.text("[data-broken='tools/broken.toml']")
    assert "commnd" in broken or "command" in broken
    assert page.find("[data-group=memory] [data-tool]")
    assert page.find("[data-group=assist]")
    # Markup in a tool file and in its answer stays text.
    assert "<img src=x" in page.text("[data-tool=hostile]")
    page.click("[data-tool=hostile]")
    page.click("[data-field=try] [data-action=try]")
    assert "<script>" in page.text("[data-field=answer] [data-field=result]")
    assert page.find_all("[data-detail=tool] img, [data-list=tools] img") == []
    assert browser.execute_script("return window.hostileRan === undefined")
    page.screenshot(artifacts / "tools.png")

    # Try `now`: its answer shows, and the run is in its history.
    page.click("[data-group=files] [data-tool=now]")
    page.wait_for(lambda: page.text("[data-field=tool-name]") == "now")
    page.click("[data-field=try] [data-action=try]")
    answer = page.text("[data-field=answer] [data-field=result]")
    assert any(char.isdigit() for char in answer)
    page.find("[data-list=tool-runs] [data-run]")

    # A changing tool asks first; the second click runs it.
    page.click("[data-group=files] [data-tool=shopping]")
    page.wait_for(lambda: page.text("[data-field=tool-name]") == "shopping")
    page.find("[data-param=item]").send_keys(f"milk {SECRET}")
    page.click("[data-field=try] [data-action=try]")
    question = page.text("[data-warning=confirm]")
    assert "Put milk" in question
    assert page.find_all("[data-list=tool-runs]") == []
    page.click("[data-action=confirm-run]")
    assert page.text("[data-field=answer] [data-field=result]") == "added milk ***"
    arguments = page.text("[data-list=tool-runs] [data-field=arguments]")
    assert SECRET not in arguments
    assert "***" in arguments
    assert SECRET not in page.text("[data-detail=tool]")
    page.screenshot(artifacts / "tools-try.png")

    # A wrong argument is a sentence; what was typed stays, the next run works.
    page.click("[data-group=files] [data-tool=calendar_add]")
    page.wait_for(lambda: page.text("[data-field=tool-name]") == "calendar_add")
    page.click("[data-field=try] [data-action=try]")
    page.find("[data-warning=confirm]")
    assert page.find_all("[data-list=tool-runs]") == []


def tool_runs(home_assistant: HomeAssistantProcess, tokens: Tokens, tool: str) -> list:
    """The tool's last runs, as its history keeps them."""
    return websocket(
        home_assistant, tokens, type="desktop_assistant/tools/runs", tool=tool
    )["runs"]


def test_try_it_runs_only_what_the_question_asked_about(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    tools_folder: Path,
    browser: webdriver.Chrome,
) -> None:
    page = open_panel(
        browser, home_assistant, admin_tokens, "/desktop-assistant/tools/shopping"
    )
    page.wait_for(lambda: page.text("[data-field=tool-name]") == "shopping")
    runs = len(tool_runs(home_assistant, admin_tokens, "shopping"))
    item = page.find("[data-param=item]")
    item.send_keys("milk")
    page.click("[data-field=try] [data-action=try]")
    assert "Put milk on" in page.text("[data-warning=confirm]")
    # The item changes while the question is shown: the question goes.
    item.send_keys(" and beer")
    page.wait_for(
        lambda: not page.find_all("[data-warning=confirm]"), what="the question gone"
    )
    assert len(tool_runs(home_assistant, admin_tokens, "shopping")) == runs
    # Asked again about what the form now says, the yes runs exactly that.
    page.click("[data-field=try] [data-action=try]")
    assert "Put milk and beer on" in page.text("[data-warning=confirm]")
    page.click("[data-action=confirm-run]")
    answer = page.text("[data-field=answer] [data-field=result]")
    assert answer == "added milk and beer"
    assert len(tool_runs(home_assistant, admin_tokens, "shopping")) == runs + 1


def test_jobs_page_next_runs_and_run_now(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    page = open_panel(browser, home_assistant, admin_tokens, "/desktop-assistant/jobs")
    assert page.text("[data-job=nightly] [data-field=next-run]")
    assert page.text("[data-job=retention] [data-field=next-run]")
    page.click("[data-job=retention]")
    page.wait_for(
        lambda: browser.current_url.endswith("/desktop-assistant/jobs/retention")
    )
    assert page.text("[data-detail=job] [data-field=schedule]")
    before = len(page.find_all("[data-list=job-runs] [data-run]"))
    page.click("[data-action=run-job]")
    page.wait_for(
        lambda: len(page.find_all("[data-list=job-runs] [data-run]")) == before + 1,
        what="the new run",
    )
    summary = page.text("[data-list=job-runs] [data-field=summary]")
    assert "conversations deleted" in summary
    page.screenshot(artifacts / "jobs.png")

    page.click("[data-job=nightly]")
    page.find("[data-detail=job] [data-field=schedule]")
    assert "03:00" in page.text("[data-detail=job] [data-field=schedule]")


@pytest.fixture
def asleep_server(
    home_assistant: HomeAssistantProcess, admin_tokens: Tokens
) -> Iterator[str]:
    """A second llama-server entry whose server went away after it was added."""
    thread = StandInThread()
    with thread as stand_in:
        entry_id = add_server(home_assistant, admin_tokens, stand_in)
    # The server is gone now: a reload finds it unreachable.
    home_assistant.request(
        "POST",
        f"/api/config/config_entries/entry/{entry_id}/reload",
        None,
        admin_tokens.access_token,
    )
    yield entry_id


def test_servers_page_reachable_and_unreachable(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    asleep_server: str,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    page = open_panel(
        browser, home_assistant, admin_tokens, "/desktop-assistant/servers"
    )
    up = page.find(f"[data-server='{integration}'] [data-field=reachable]")
    assert up.get_attribute("data-reachable") == "yes"
    down = page.wait_for(
        lambda: (
            page.find(
                f"[data-server='{asleep_server}'] [data-field=reachable]"
            ).get_attribute("data-reachable")
            == "no"
            or (page.click("[data-tab=servers]") and False)
        ),
        what="the unreachable server",
    )
    assert down
    page.click(f"[data-server='{integration}']")
    agents = page.text("[data-detail=server] [data-list=agents]")
    assert "asks it first" in agents
    page.screenshot(artifacts / "servers.png")


def test_servers_page_and_repairs_warn_of_a_template_that_cannot_call_tools(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
    artifacts: Path,
    tmp_path: Path,
) -> None:
    model = cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
    token = admin_tokens.access_token
    with start_llama_server(tmp_path, "--ctx-size", "2048", model=model) as server:
        flow = home_assistant.request(
            "POST",
            "/api/config/config_entries/flow",
            {"handler": "desktop_assistant", "show_advanced_options": False},
            token,
        )
        path = f"/api/config/config_entries/flow/{flow['flow_id']}"
        result = home_assistant.request("POST", path, {"url": server.url}, token)
        assert result["step_id"] == "tool_calls", result
        result = home_assistant.request("POST", path, {"tool_calls": "auto"}, token)
        assert result["type"] == "create_entry", result
        entry_id = result["result"]["entry_id"]
        issues = websocket(home_assistant, admin_tokens, type="repairs/list_issues")
        (issue,) = [
            issue
            for issue in issues["issues"]
            if issue["issue_id"] == f"no_tool_calls_{entry_id}"
        ]
        # The agent's Tool calls are Automatic: constrained here.
        assert issue["translation_key"] == "constrained_tool_calls"

        page = open_constrained_server(browser, home_assistant, admin_tokens, entry_id)
        page.screenshot(artifacts / "servers-no-tool-calls.png")
        home_assistant.request(
            "DELETE", f"/api/config/config_entries/entry/{entry_id}", None, token
        )
    # The entry went, and its issue with it.
    issues = websocket(home_assistant, admin_tokens, type="repairs/list_issues")
    assert issue["issue_id"] not in {each["issue_id"] for each in issues["issues"]}


def test_the_panel_speaks_the_profile_language(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
    artifacts: Path,
) -> None:
    websocket(
        home_assistant,
        admin_tokens,
        type="frontend/set_user_data",
        key="language",
        value={
            "language": "it",
            "number_format": "language",
            "time_format": "language",
        },
    )
    try:
        page = open_panel(
            browser, home_assistant, admin_tokens, "/desktop-assistant/memory"
        )
        page.wait_for(
            lambda: page.text("[data-tab=conversations]") == "Conversazioni",
            what="Italian tabs",
        )
        assert page.text("[data-tab=memory]") == "Memoria"
        assert "Scegli una pagina" in page.text("[data-detail=page] [data-hint]")
        page.screenshot(artifacts / "italian.png")
    finally:
        websocket(
            home_assistant,
            admin_tokens,
            type="frontend/set_user_data",
            key="language",
            value={
                "language": "en",
                "number_format": "language",
                "time_format": "language",
            },
        )


def page_id(home_assistant: HomeAssistantProcess, tokens: Tokens, name: str) -> int:
    listed = websocket(
        home_assistant, tokens, type="desktop_assistant/memory/pages/list"
    )
    (found,) = [page["page_id"] for page in listed["pages"] if page["name"] == name]
    return found


def test_deep_links_back_forward_and_reload(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
) -> None:
    sara = page_id(home_assistant, admin_tokens, "Sara")
    page = open_panel(
        browser, home_assistant, admin_tokens, f"/desktop-assistant/memory/{sara}"
    )
    page.wait_for(lambda: page.text("[data-field=page-name]") == "Sara", what="Sara")
    # A reload keeps the view.
    browser.refresh()
    page.wait_for(
        lambda: page.text("[data-field=page-name]") == "Sara", what="Sara again"
    )

    page = open_panel(
        browser,
        home_assistant,
        admin_tokens,
        "/desktop-assistant/conversations/kitchen-weather",
    )
    page.find("[data-detail=conversation] [data-entry=tool_call]")
    assert "selected" in page.find("[data-conversation=kitchen-weather]").get_attribute(
        "class"
    )

    # From the list to a page and back.
    page.click("[data-tab=memory]")
    page.find("[data-detail=page] [data-hint]")
    page.click("[data-list=pages] [data-page=Anouk]")
    page.wait_for(lambda: page.text("[data-field=page-name]") == "Anouk")
    assert browser.current_url.endswith(
        f"/desktop-assistant/memory/{page_id(home_assistant, admin_tokens, 'Anouk')}"
    )
    browser.back()
    page.wait_for(
        lambda: page.find_all("[data-detail=page] [data-hint]"), what="the list"
    )
    assert browser.current_url.endswith("/desktop-assistant/memory")
    browser.back()
    page.find("[data-detail=conversation] [data-entry=tool_call]")
    browser.forward()
    page.find("[data-detail=page] [data-hint]")


def test_urls_that_name_nothing_show_a_list_or_not_found(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
) -> None:
    # A tab named after a member every object has is no tab: the first one.
    page = open_panel(
        browser, home_assistant, admin_tokens, "/desktop-assistant/constructor"
    )
    page.find("[data-tab=conversations].active")
    page.find("[data-detail=conversation] [data-hint]")

    # A malformed escape names no item: the tab's list.
    page = open_panel(
        browser, home_assistant, admin_tokens, "/desktop-assistant/memory/%E0"
    )
    page.find("[data-tab=memory].active")
    page.find("[data-detail=page] [data-hint]")
    page.find("[data-list=pages] [data-page=Sara]")

    # What was open closes when the next URL names nothing there is.
    sara = page_id(home_assistant, admin_tokens, "Sara")
    browser.execute_script(NAVIGATE, f"/desktop-assistant/memory/{sara}")
    page.wait_for(lambda: page.text("[data-field=page-name]") == "Sara", what="Sara")
    browser.execute_script(NAVIGATE, "/desktop-assistant/memory/not-a-number")
    page.find("[data-error=not_found]")
    page.find("[data-detail=page] [data-hint]")
    assert not page.find_all("[data-field=page-name]")
    assert not page.find_all("[data-list=pages] .selected")

    browser.execute_script(NAVIGATE, "/desktop-assistant/conversations/kitchen-weather")
    page.find("[data-detail=conversation] [data-entry=tool_call]")
    browser.execute_script(NAVIGATE, "/desktop-assistant/conversations/deleted-since")
    page.find("[data-error=not_found]")
    page.find("[data-detail=conversation] [data-hint]")
    assert not page.find_all("[data-detail=conversation] [data-entry]")


# The module's own code, timed in the browser on texts that used to freeze it.
TIMING = """
const [url, done] = [arguments[0], arguments[arguments.length - 1]];
import(url).then((dom) => {
  const links = "[[".repeat(50000);
  const lines = Array.from({ length: 10000 }, (_, i) => `- 2026-11-${i % 28}: note ${i}`);
  const changed = [...lines.slice(0, 5000), "- a new line", ...lines.slice(5001)].join("\\n");
  let started = performance.now();
  const rendered = dom.renderMarkdown(links, (name, label) => label);
  const markdown = performance.now() - started;
  started = performance.now();
  const diff = dom.lineDiff(lines.join("\\n"), changed);
  const unlike = dom.lineDiff(lines.join("\\n"), lines.map((line) => line + "!").join("\\n"));
  const history = performance.now() - started;
  done({
    markdown, history, text: rendered.textContent.length,
    edits: diff.filter((line) => line.kind !== "same").map((line) => line.kind + ":" + line.line),
    unlike: unlike.length,
  });
}, (error) => done({ error: String(error) }));
"""


def test_large_texts_render_in_linear_time(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
) -> None:
    page = open_panel(browser, home_assistant, admin_tokens)
    browser.set_script_timeout(60)
    module = page.driver.execute_script(
        "return [...document.querySelectorAll('script')].length >= 0"
    )
    assert module
    timing = browser.execute_async_script(TIMING, "/desktop_assistant_static/dom.js")
    assert "error" not in timing, timing
    assert timing["text"] == 100_000  # every `[` shown as text
    assert timing["edits"] == [
        "removed:- 2026-11-16: note 5000",
        "added:- a new line",
    ]
    assert timing["unlike"] == 20_000
    # Were 16 s and 6.9 s; generous bounds for a loaded machine.
    assert timing["markdown"] < 3000, json.dumps(timing)
    assert timing["history"] < 3000, json.dumps(timing)


def test_tools_on_a_phone_in_dark_mode(
    home_assistant: HomeAssistantProcess,
    admin_tokens: Tokens,
    tools_folder: Path,
    artifacts: Path,
) -> None:
    storage = admin_tokens.frontend_storage(home_assistant.base_url)
    with phone(home_assistant.base_url, storage, dark=True) as page:
        page.open("/desktop-assistant/tools/echo")
        panel = page.find("desktop-assistant-panel")
        page.wait_for(lambda: page.text("[data-field=tool-name]") == "echo")
        assert page.wait_for(
            lambda: (
                luminance(
                    page.driver.execute_script(
                        "return getComputedStyle(arguments[0]).backgroundColor", panel
                    )
                )
                < 0.2
            ),
            what="a dark background",
        )
        # The tool takes the screen, nothing is wider than it, and Back leads to the list.
        assert not page.find("[data-list=tools]").is_displayed()
        widths = page.driver.execute_script(
            "return [arguments[0].shadowRoot.querySelector('main').scrollWidth, innerWidth]",
            panel,
        )
        assert widths[0] <= PHONE_WIDTH == widths[1]
        # Every tab can be reached: on a phone the tabs wrap into rows.
        servers_tab = page.find("[data-tab=servers]")
        page.driver.execute_script("arguments[0].scrollIntoView()", servers_tab)
        assert servers_tab.rect["x"] + servers_tab.rect["width"] <= PHONE_WIDTH + 1
        page.driver.execute_script(
            "arguments[0].scrollIntoView()", page.find("[data-tab=tools]")
        )
        page.screenshot(artifacts / "phone-tools-dark.png")
        page.click("[data-detail=tool] [data-action=back-to-list]")
        page.wait_for(lambda: page.find("[data-list=tools]").is_displayed())
        assert page.find("[data-list=tools] [data-tool=echo]")

        # The conversation filters wrap within the screen.
        page.click("[data-tab=conversations]")
        chips = page.find("[data-filter=device]").rect
        assert chips["x"] + chips["width"] <= PHONE_WIDTH


def test_memory_editor_keeps_its_labels_and_history_names_authors(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
) -> None:
    anouk = page_id(home_assistant, admin_tokens, "Anouk")
    page = open_panel(
        browser, home_assistant, admin_tokens, f"/desktop-assistant/memory/{anouk}"
    )
    page.click("[data-detail=page] [data-action=edit]")
    # Filled fields keep their labels; the kind is a row of buttons.
    labels = [field.text.split("\n")[0] for field in page.find_all(".field")]
    assert labels[:4] == ["Name", "Kind", "Other names", "Text"]
    assert page.attributes("[data-filter=type] [aria-pressed=true]", "data-value") == [
        "person"
    ]
    kinds = page.attributes("[data-filter=type] button", "data-value")
    assert kinds == ["person", "place", "project", "thing", "other"]
    page.click("[data-filter=type] [data-value=place]")
    assert page.attributes("[data-filter=type] [aria-pressed=true]", "data-value") == [
        "place"
    ]
    page.click("[data-detail=page] [data-action=cancel]")

    # The history says who wrote each version in words, never a bare "person".
    page.click("[data-detail=page] [data-action=history]")
    authors = [each.text for each in page.find_all("[data-field=author]")]
    assert authors
    assert all(author not in {"person", "remember", "nightly"} for author in authors)


def test_memory_shows_whose_each_page_is_and_moves_it(
    home_assistant: HomeAssistantProcess,
    integration: str,
    admin_tokens: Tokens,
    browser: webdriver.Chrome,
) -> None:
    """The owner choice moves a page to a member and back; the list follows."""
    sara = page_id(home_assistant, admin_tokens, "Sara")
    page = open_panel(
        browser, home_assistant, admin_tokens, f"/desktop-assistant/memory/{sara}"
    )
    listed = "[data-list=pages] [data-page=Sara] [data-field=owner]"
    assert page.text(listed) == "Household"
    owner = Select(page.find("[data-detail=page] select[data-field=owner]"))
    owner.select_by_visible_text("Anouk")
    page.wait_for(lambda: page.text(listed) == "Anouk", what="the new owner")
    page.click("[data-filter=owner] [data-value=household]")
    page.wait_for(lambda: not page.find_all("[data-list=pages] [data-page=Sara]"))
    page.click('[data-filter=owner] [data-value=""]')
    owner = Select(page.find("[data-detail=page] select[data-field=owner]"))
    owner.select_by_value("household")
    page.wait_for(lambda: page.text(listed) == "Household", what="the household")
