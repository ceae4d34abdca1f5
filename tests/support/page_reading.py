"""Reading JupyterLab's page in Chromium (Selenium) while JupyterLab redraws it.

JupyterLab replaces parts of its page as it starts, opens a notebook or runs a cell: an
element found a moment ago may be gone when it is read (Selenium's
StaleElementReferenceException). Every read here looks again instead of failing; a
fresh-clone CI run failed once on such a read (the browser test's wait for notebook 00's
cells). Used by tests/test_browser.py and tests/deploy/test_hub.py.
"""

from __future__ import annotations

import time
from typing import Any, Callable, List, TypeVar

T = TypeVar("T")

#: how many times a read that met a redrawn element is tried again, 0.5 s apart
READ_TRIES = 20


def read_page(read: Callable[[], T], tries: int = READ_TRIES) -> T:
    """``read()``, tried again (0.5 s apart) while it meets an element JupyterLab redrew."""
    from selenium.common.exceptions import StaleElementReferenceException

    for _ in range(tries - 1):
        try:
            return read()
        except StaleElementReferenceException:
            time.sleep(0.5)
    return read()


def shown(driver: Any, css: str) -> List[Any]:
    """The elements ``css`` shown on the page now."""
    from selenium.webdriver.common.by import By

    return read_page(lambda: [e for e in driver.find_elements(By.CSS_SELECTOR, css)
                              if e.is_displayed()])


def texts(driver: Any, css: str) -> List[str]:
    """The text of every element ``css`` (shown or not)."""
    from selenium.webdriver.common.by import By

    return read_page(lambda: [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)])


def wait_for(driver: Any, css: str, timeout_s: float, gone: bool = False) -> List[Any]:
    """Until an element ``css`` is shown (or, ``gone``, none is); the shown ones."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        visible = shown(driver, css)
        if (not visible) if gone else visible:
            return visible
        time.sleep(1)
    state = "still there" if gone else "never appeared"
    raise AssertionError(f"{state}: {css} (at {driver.current_url})")


def click_text(driver: Any, css: str, text: str, double: bool = False) -> None:
    """Click (or double-click) the shown element ``css`` whose text is ``text``."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    def click() -> bool:
        for element in driver.find_elements(By.CSS_SELECTOR, css):
            if element.text.strip() == text and element.is_displayed():
                actions = ActionChains(driver)
                (actions.double_click(element) if double else actions.click(element)).perform()
                return True
        return False

    if not read_page(click):
        raise AssertionError(f"no {css} reads {text!r}")
