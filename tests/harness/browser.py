"""Headless Chromium (Debian's package) driven through chromedriver.

Home Assistant's frontend nests its elements in shadow roots, so elements are
found with a query that walks through them.
"""

from collections.abc import Callable, Iterator
import contextlib
import json
from pathlib import Path
import tempfile
import time
from typing import Any

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webelement import WebElement

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 20.0
PHONE_WIDTH = 390

# Finds the first element matching a CSS selector in the document or any
# shadow root below it, and all of them with `all`.
DEEP_QUERY = """
const [selector, all] = arguments;
const found = [];
const visit = (root) => {
  for (const element of root.querySelectorAll(selector)) {
    found.push(element);
    if (!all) return true;
  }
  for (const element of root.querySelectorAll("*")) {
    if (element.shadowRoot && visit(element.shadowRoot) && !all) return true;
  }
  return false;
};
visit(document);
return all ? found : found[0] || null;
"""


@contextlib.contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless Chromium with an empty profile, that reaches nothing but loopback."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    with tempfile.TemporaryDirectory() as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


class Page:
    """A browser on Home Assistant, logged in as one user."""

    def __init__(self, driver: webdriver.Chrome, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url

    def log_in(self, tokens: dict[str, Any]) -> None:
        """Store the user's tokens where the frontend keeps them."""
        self.driver.get(f"{self.base_url}/manifest.json")
        self.driver.execute_script(
            "localStorage.setItem('hassTokens', arguments[0]);", json.dumps(tokens)
        )

    def open(self, path: str) -> None:
        """Go to a page of Home Assistant."""
        self.driver.get(f"{self.base_url}{path}")

    def find(self, selector: str, timeout: float = WAIT) -> WebElement:
        """The first element matching the selector, waiting for it to appear."""
        deadline = time.monotonic() + timeout
        while True:
            element = self.driver.execute_script(DEEP_QUERY, selector, False)
            if element is not None:
                return element
            if time.monotonic() > deadline:
                raise AssertionError(f"no element matches {selector!r}")
            time.sleep(0.1)

    def click(self, selector: str, timeout: float = WAIT) -> None:
        """Click the first element matching the selector, once it is there."""
        self._on_element(selector, lambda element: element.click(), timeout)

    def text(self, selector: str, timeout: float = WAIT) -> str:
        """The text of the first element matching the selector, once it is there."""
        return self._on_element(selector, lambda element: element.text, timeout)

    def _on_element[T](
        self, selector: str, action: Callable[[WebElement], T], timeout: float
    ) -> T:
        """Act on the first element matching the selector.

        The panel redraws a list when its data comes: an element found a
        moment before may be gone, and nothing is done to it; the action is
        done again on the element drawn in its place.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                return action(self.find(selector, timeout))
            except StaleElementReferenceException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def find_all(self, selector: str) -> list[WebElement]:
        """Every element matching the selector now."""
        return self.driver.execute_script(DEEP_QUERY, selector, True)

    def attributes(self, selector: str, name: str) -> list[str]:
        """An attribute of every element matching the selector, read at once."""
        return self.driver.execute_script(
            f"return (() => {{ {DEEP_QUERY} }})()"
            ".map((element) => element.getAttribute(arguments[2]))",
            selector,
            True,
            name,
        )

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a select, as a person's click does."""
        self.driver.execute_script(
            "arguments[0].value = arguments[1];"
            "arguments[0].dispatchEvent(new Event('change'))",
            self.find(selector),
            value,
        )

    def wait_for(
        self,
        condition: Any,
        timeout: float = WAIT,
        what: str | Callable[[], str] = "",
    ) -> Any:
        """Wait until the condition returns something true; return it."""
        deadline = time.monotonic() + timeout
        while True:
            # The panel redraws lists: an element read a moment ago may be gone.
            with contextlib.suppress(StaleElementReferenceException):
                if value := condition():
                    return value
            if time.monotonic() > deadline:
                # `what` may be a function: what the page shows at the end.
                described = what() if callable(what) else what
                raise AssertionError(f"timed out waiting for {described or condition}")
            time.sleep(0.1)

    def screenshot(self, path: Path) -> None:
        """Save what the page shows now as a PNG."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(path))


def luminance(css_color: str) -> float:
    """Relative brightness, 0 to 1, of an `rgb(...)` colour."""
    red, green, blue = (
        int(part) for part in css_color[css_color.index("(") + 1 : -1].split(",")[:3]
    )
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@contextlib.contextmanager
def phone(base_url: str, tokens: dict[str, Any], dark: bool) -> Iterator[Page]:
    """A phone-sized headless Chromium, logged in, in the light or dark theme."""
    with chromium() as driver:
        # A phone's screen: headless windows are at least 500 pixels wide.
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": PHONE_WIDTH,
                "height": 844,
                "deviceScaleFactor": 2,
                "mobile": True,
            },
        )
        # The system's colour scheme too: Home Assistant's default theme
        # follows it wherever the stored choice is not read yet.
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {
                "features": [
                    {
                        "name": "prefers-color-scheme",
                        "value": "dark" if dark else "light",
                    }
                ]
            },
        )
        page = Page(driver, base_url)
        page.log_in(tokens)
        driver.execute_script(
            "localStorage.setItem('selectedTheme', arguments[0])",
            json.dumps({"theme": "default", "dark": dark}),
        )
        yield page
