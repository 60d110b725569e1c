"""A newcomer's first answer: scripts/develop's household, then the Assist dialog.

The household is started by its own code (tests/harness/household.py) on
free ports in a tmp folder, with the real SmolLM2 on llama-server and no
speech engines; a person made through onboarding types a question into the
Assist dialog of headless Chromium and reads the real model's answer.
"""

import asyncio
from collections.abc import Iterator
from pathlib import Path
import time

import pytest
from selenium.webdriver import Chrome
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement

from tests.harness.browser import Page
from tests.harness.dev_household import PIPELINE_NAME
from tests.harness.home_assistant_process import HomeAssistantProcess
from tests.harness.household import (
    Household,
    HouseholdPlan,
    start_home_assistant,
    start_llama_server,
    write_configuration,
)
from tests.harness.ports import free_port
from tests.harness.real_engines import (
    MISSING_SMOLLM2,
    SMOLLM2_MODEL,
    cached_model,
    llama_server_binary,
)

from .conftest import ADMIN

QUESTION = "What is the capital of France?"
# SmolLM2 on a loaded 2-core machine: loading, the first prompt, the answer.
ANSWER_WITHIN = 240.0
WIRED_WITHIN = 180.0


@pytest.fixture(scope="module")
def household(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Household]:
    """scripts/develop --no-voice's household, on free ports in a tmp folder."""
    llama_server_binary()
    cached_model(SMOLLM2_MODEL, MISSING_SMOLLM2)
    plan = HouseholdPlan(
        dev=tmp_path_factory.mktemp("dev"),
        llama_port=free_port(),
        hass_port=free_port(),
    )
    household = Household(plan)
    try:
        config = write_configuration(plan, start_llama_server(household), voice=False)
        start_home_assistant(household, config, [], to_terminal=False)
        household.wait_until_ready("home-assistant", plan.hass_port, "/api/onboarding")
        yield household
    finally:
        household.stop()


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


def _type_question(page: Page) -> None:
    """Click into the dialog's field and type, as a person does.

    A repeated `a` may have reached the field once the dialog opened.
    """
    page.click("#message-input")
    ActionChains(page.driver).key_down(Keys.CONTROL).send_keys("a").key_up(
        Keys.CONTROL
    ).send_keys(Keys.BACKSPACE, QUESTION, Keys.ENTER).perform()


# Its own waits, not the suite's 120 s: onboarding, wiring and the answer of
# a real model that reads the tools' instructions (constrained calls).
@pytest.mark.timeout(WIRED_WITHIN + ANSWER_WITHIN + 60)
def test_typed_question_gets_the_real_models_answer(
    household: Household, browser: Chrome, artifacts: Path
) -> None:
    """Onboard, press `a` on the Overview, type a question, read the answer."""
    process = HomeAssistantProcess(
        household.plan.dev / "config", port=household.plan.hass_port
    )
    tokens = process.onboard(*ADMIN)
    _wait_for_pipeline(process, tokens.access_token)
    page = Page(browser, process.base_url)
    page.log_in(tokens.frontend_storage(process.base_url))
    page.open("/lovelace/0")
    page.find("hui-root")
    _open_assist(page)
    greetings = len(page.wait_for(lambda: _answers(page), what="the greeting"))
    _type_question(page)

    def paris_answered() -> list[str]:
        answers = _answers(page)
        return answers if "paris" in "".join(answers[greetings:]).casefold() else []

    try:
        answers = page.wait_for(
            paris_answered,
            timeout=ANSWER_WITHIN,
            what=lambda: f"an answer naming Paris; the dialog shows {_answers(page)}",
        )
    finally:
        page.screenshot(artifacts / "newcomer-assist.png")
    assert not page.find_all(".message.error")
    assert QUESTION in [element.text for element in page.find_all(".message.user")]
    assert answers[greetings:] == [answers[-1]]
    assert "paris" in answers[-1].casefold()
