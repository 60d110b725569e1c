"""A newcomer's first hour: scripts/develop's household, as the README tells it.

The household is started by its own code (tests/harness/household.py) on
free ports in a tmp folder, with the real SmolLM2 on llama-server, and the
speech engines where they are installed. A person made through onboarding
asks the Assist dialog of headless Chromium the README's questions, a
satellite asks a spoken one through scripts/ask-satellite, and the owner and
a member each use Chat. Each test asserts what the README says of it.
"""

import asyncio
from collections.abc import Iterator
from functools import partial
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
import time

import pytest
from selenium.webdriver import Chrome
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from custom_components.desktop_assistant.const import (
    CONF_TURN_TIMEOUT,
    DEFAULT_AGENT_OPTIONS,
)
from tests.harness.browser import Page
from tests.harness.dev_household import PIPELINE_NAME
from tests.harness.home_assistant_process import HomeAssistantProcess, Tokens
from tests.harness.household import (
    Household,
    HouseholdPlan,
    start_home_assistant,
    start_llama_server,
    start_voice,
    start_whisper_server,
    write_configuration,
)
from tests.harness.ports import free_port
from tests.harness.real_engines import (
    MISSING_SMOLLM2,
    SMOLLM2_MODEL,
    WHISPER_MODEL,
    cached_model,
    llama_server_binary,
    real_kokoro_dir,
)
from tests.harness.satellite import spoken_wav

from .conftest import ADMIN, add_member
from .helpers import CHAT, new_thread

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is the capital of France?"
# SmolLM2 on a loaded 2-core machine: loading, the first prompt, the answer.
ANSWER_WITHIN = 240.0
WIRED_WITHIN = 180.0
# A tool question's rounds may take the agent's whole turn time limit, after
# which it says so: an answer too.
TOOL_ANSWER_WITHIN = DEFAULT_AGENT_OPTIONS[CONF_TURN_TIMEOUT] + 60.0


# What the README promises of a tool question: an answer, maybe wrong, but
# never a tool's own words (a description, an error, a tool's name).
TOOL_WORDS = (
    "provides real-time information",
    "no exposed entities",
    "homeassistant__",
    "desktop_assistant__",
    "error:",
)
# How our sentences for an answer that repeated a tool's text begin
# (translations: fault_tool_failed, fault_tool_described).
FAULT_OPENINGS = ("I couldn't use ", "Sorry, I couldn't answer")
# The label of a tool call's details in a reply of the Assist dialog.
DETAILS_LABEL = "Show details"
TOOL_QUESTIONS = ("What time is it?", "What is the weather like?")


def voice_missing() -> str | None:
    """Why develop's speech engines cannot start here, or None when they can."""
    cache = Path(os.environ.get("MODEL_CACHE", "/nonexistent"))
    needed = {
        "whisper-server": shutil.which("whisper-server"),
        "Whisper base": (cache / WHISPER_MODEL).is_file() or None,
        "the Kokoro model": real_kokoro_dir(),
        "espeak-ng": shutil.which("espeak-ng"),
        # Home Assistant converts the spoken reply to MP3 with it (develop
        # installs it).
        "ffmpeg": shutil.which("ffmpeg"),
    }
    missing = [name for name, found in needed.items() if not found]
    return f"not installed here: {', '.join(missing)}" if missing else None


@pytest.fixture(scope="module")
def household(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Household]:
    """scripts/develop's household on free ports in a tmp folder.

    With its speech engines where they are installed (scripts/develop
    installs them all); without, the spoken question's test skips.
    """
    llama_server_binary()
    cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
    voice = voice_missing() is None
    plan = HouseholdPlan(
        dev=tmp_path_factory.mktemp("dev"),
        llama_port=free_port(),
        hass_port=free_port(),
        whisper_port=free_port(),
        relay_port=free_port(),
        kokoro_port=free_port(),
    )
    household = Household(plan)
    try:
        llm_url = start_llama_server(household)
        if voice:
            start_voice(household, start_whisper_server(household))
        config = write_configuration(plan, llm_url, voice=voice)
        start_home_assistant(household, config, [], to_terminal=False)
        household.wait_until_ready("home-assistant", plan.hass_port, "/api/onboarding")
        yield household
    finally:
        household.stop()


@pytest.fixture(scope="module")
def process(household: Household) -> HomeAssistantProcess:
    """The household's Home Assistant, as the tests talk to it."""
    return HomeAssistantProcess(
        household.plan.dev / "config", port=household.plan.hass_port
    )


@pytest.fixture(scope="module")
def owner(process: HomeAssistantProcess) -> Tokens:
    """The person who onboarded, once dev_household has wired the household."""
    tokens = process.onboard(*ADMIN)
    _wait_for_pipeline(process, tokens.access_token)
    return tokens


def _preferred_pipeline(process: HomeAssistantProcess, token: str) -> str | None:
    """The name of the preferred Assist pipeline, once there is one."""
    [listing] = asyncio.run(
        process.websocket(token, {"type": "assist_pipeline/pipeline/list"})
    )
    if "pipelines" not in listing:  # assist_pipeline is still being set up
        return None
    preferred = listing["preferred_pipeline"]
    return next((p["name"] for p in listing["pipelines"] if p["id"] == preferred), None)


def _wait_for_pipeline(process: HomeAssistantProcess, token: str) -> None:
    """dev_household wires the household once Home Assistant has started."""
    deadline = time.monotonic() + WIRED_WITHIN
    while (name := _preferred_pipeline(process, token)) != PIPELINE_NAME:
        assert time.monotonic() < deadline, f"the preferred pipeline is {name!r}"
        time.sleep(0.5)


def _answers(page: Page) -> list[str]:
    """The assistant's messages in the Assist dialog, in order."""
    return [element.text for element in page.find_all(".message.hass")]


def _open_assist(page: Page) -> None:
    """Press `a`, the shortcut HA's frontend gives Assist, until the dialog is up."""

    def dialog_after_a_press() -> list[WebElement]:
        ActionChains(page.driver).send_keys("a").perform()
        return page.find_all("#message-input")

    page.wait_for(dialog_after_a_press, what="the Assist dialog")


def _type_question(page: Page, question: str) -> None:
    """Click into the dialog's field and type, as a person does.

    A repeated `a` may have reached the field once the dialog opened.
    """
    page.click("#message-input")
    ActionChains(page.driver).key_down(Keys.CONTROL).send_keys("a").key_up(
        Keys.CONTROL
    ).send_keys(Keys.BACKSPACE, question, Keys.ENTER).perform()


def _answered(page: Page) -> bool:
    """Whether the open Chat thread shows the model's answer (its server line).

    Not what it says: SmolLM2's answer moves with the clock its prompt
    carries ("France" as often as "Paris" on some minutes); Chat's claim
    is whose threads are whose.
    """
    return ", model " in page.text("[data-entries]")


def _thread_shows(page: Page, awaited: str) -> str:
    """What a wait for `awaited` ends on: what the open thread showed then."""
    return f"{awaited}; the thread showed {page.text('[data-entries]')!r}"


def _newest_entries(process: HomeAssistantProcess, token: str) -> list[dict]:
    """The entries of the newest recorded conversation; none before one."""
    [listed] = asyncio.run(
        process.websocket(
            token, {"type": "desktop_assistant/conversations/list", "limit": 1}
        )
    )
    if not listed.get("conversations"):
        return []
    [kept] = asyncio.run(
        process.websocket(
            token,
            {
                "type": "desktop_assistant/conversations/get",
                "conversation_id": listed["conversations"][0]["conversation_id"],
            },
        )
    )
    return kept["entries"]


def _ask_in_dialog(
    page: Page,
    process: HomeAssistantProcess,
    token: str,
    question: str,
    turn: int,
    within: float = ANSWER_WITHIN,
) -> tuple[list[str], list[str]]:
    """Type the question; once the record kept its turn, what answered it.

    The agent's replies and fault sentences as the record kept them, and
    the dialog's messages after the question (less the label of a tool
    call's details). On a busy 2-core machine a tool question of SmolLM2's
    may outlast Home Assistant's own 5-minute limit on a pipeline run (the
    dialog then says "Timeout running pipeline"); the record still has the
    agent's answer.
    """
    _type_question(page, question)

    def recorded() -> list[dict]:
        entries = _newest_entries(process, token)
        asked = [e for e in entries if e["kind"] == "user"]
        return entries if len(asked) == turn else []

    entries = page.wait_for(recorded, timeout=within, what=f"the turn of {question!r}")
    asked_at = max(i for i, entry in enumerate(entries) if entry["kind"] == "user")
    answered = [
        entry.get("text") or ""
        for entry in entries[asked_at + 1 :]
        if entry["kind"] in ("assistant", "fault")
    ]
    messages = page.find_all(".message")
    shown_at = max(
        index
        for index, message in enumerate(messages)
        if "user" in message.get_attribute("class").split()
    )
    shown = [
        message.text.replace(DETAILS_LABEL, "").strip()
        for message in messages[shown_at + 1 :]
    ]
    return answered, shown


# Its own waits, not the suite's 120 s: onboarding, wiring and three answers
# of a real model that reads the tools' instructions (constrained calls).
@pytest.mark.timeout(WIRED_WITHIN + ANSWER_WITHIN + 2 * TOOL_ANSWER_WITHIN + 60)
def test_the_readmes_three_questions_in_the_assist_dialog(
    process: HomeAssistantProcess, owner: Tokens, browser: Chrome, artifacts: Path
) -> None:
    """Press `a` on the Overview and type; the answers are what the README says.

    A plain question gets an answer, no error; a tool question an answer
    that may be wrong, but never a tool's own words. Not whether it names
    Paris: develop's agent runs at temperature 0, so SmolLM2's answer is
    fixed by its prompt, and the prompt carries Home Assistant's clock
    (`llm.DATE_TIME_PROMPT`, to the second): on some seconds it says
    "France". A test may not depend on the time of day.
    """
    page = Page(browser, process.base_url)
    page.log_in(owner.frontend_storage(process.base_url))
    page.open("/lovelace/0")
    page.find("hui-root")
    _open_assist(page)
    page.wait_for(lambda: _answers(page), what="the greeting")
    try:
        answered, shown = _ask_in_dialog(page, process, owner.access_token, QUESTION, 1)
        assert any(text.strip() for text in answered), answered
        assert any(text.strip() for text in shown), shown
        assert not page.find_all(".message.error")
        for turn, question in enumerate(TOOL_QUESTIONS, start=2):
            answered, shown = _ask_in_dialog(
                page, process, owner.access_token, question, turn, TOOL_ANSWER_WITHIN
            )
            # The agent answered (maybe wrongly, maybe with a fault sentence).
            assert any(text.strip() for text in answered), (question, answered)
            # What the person saw, less our own sentence for a repeated tool
            # text, which names the tool and quotes its error on purpose.
            said = " ".join(
                text for text in shown if not text.startswith(FAULT_OPENINGS)
            ).casefold()
            assert not [w for w in TOOL_WORDS if w in said], (question, answered, shown)
    finally:
        page.screenshot(artifacts / "newcomer-assist.png")
    asked = [element.text for element in page.find_all(".message.user")]
    assert asked == [QUESTION, *TOOL_QUESTIONS]


def test_the_panel_says_constrained_calls_and_how_to_add_tools(
    process: HomeAssistantProcess, owner: Tokens, browser: Chrome, artifacts: Path
) -> None:
    """The Servers page names SmolLM2 by its file and says its calls are
    constrained; the empty Tool files card says how to add one."""
    page = Page(browser, process.base_url)
    page.log_in(owner.frontend_storage(process.base_url))
    page.open("/desktop-assistant/servers")
    badge = page.text("[data-list=servers] [data-tool-calls]")
    assert badge == "constrained tool calls"
    listed = page.text("[data-list=servers]")
    assert "SmolLM2-135M-Instruct" in listed
    assert "/var/cache" not in listed
    page.screenshot(artifacts / "newcomer-servers.png")
    page.open("/desktop-assistant/tools")
    empty = page.text("[data-group=files] [data-empty=files]")
    assert "No tool files yet" in empty
    assert "Install the example tools" in empty
    page.screenshot(artifacts / "newcomer-tools.png")


@pytest.mark.timeout(ANSWER_WITHIN + 60)
def test_a_spoken_question_through_ask_satellite(
    process: HomeAssistantProcess, owner: Tokens, tmp_path: Path
) -> None:
    """scripts/ask-satellite, as the README shows it: heard, answered, spoken."""
    if reason := voice_missing():
        pytest.skip(f"develop's speech engines are {reason}")
    question = tmp_path / "question.wav"
    question.write_bytes(spoken_wav(QUESTION))
    reply = tmp_path / "reply.mp3"
    asked = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.harness.ask_satellite",
            str(question),
            str(reply),
            "--url",
            process.base_url,
        ],
        input=f"{owner.access_token}\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=ANSWER_WITHIN,
        check=False,
    )
    assert asked.returncode == 0, asked.stderr
    heard, answered, spoken = asked.stderr.strip().splitlines()[-3:]
    # develop's whisper-server runs with -ac 512, which may hear "capital on
    # France" (docs/voice-setup.md); the question still reaches the model.
    assert {"capital", "france"} <= set(re.findall(r"\w+", heard.casefold()))
    # An answer, whatever its words: they move with the clock in the
    # prompt (see the Assist dialog's test).
    assert answered.removeprefix("answered:").strip(), asked.stderr
    assert spoken.startswith("reply:    audio/mpeg"), asked.stderr
    assert reply.stat().st_size > 1000


@pytest.mark.timeout(2 * ANSWER_WITHIN + 60)
def test_chat_keeps_the_owners_and_a_members_threads_apart(
    process: HomeAssistantProcess, owner: Tokens, browser: Chrome, artifacts: Path
) -> None:
    """Each person's threads are their own: another's answers as unknown."""
    member = add_member(process, owner)
    threads = {}
    for name, tokens in (("owner", owner), ("member", member)):
        page = Page(browser, process.base_url)
        page.log_in(tokens.frontend_storage(process.base_url))
        page.open(CHAT)
        page.find("[data-list=threads]")
        threads[name] = new_thread(page, QUESTION)
        page.wait_for(
            partial(_answered, page),
            timeout=ANSWER_WITHIN,
            what=partial(_thread_shows, page, f"the {name}'s answer"),
        )
        page.screenshot(artifacts / f"newcomer-chat-{name}.png")
    listed = page.attributes("[data-list=threads] [data-thread]", "data-thread")
    assert threads["member"] in listed
    assert threads["owner"] not in listed
    # The member opens the owner's thread: as an unknown one.
    page.open(f"{CHAT}/{threads['owner']}")
    page.wait_for(
        lambda: "There is no such thread." in page.text("[role=alert]"),
        what="the owner's thread answered as unknown",
    )
