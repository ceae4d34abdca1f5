"""The browser tests' page reads look again when JupyterLab redrew an element."""

import pytest

pytest.importorskip("selenium")

from page_reading import read_page  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402


def test_a_read_that_met_a_redrawn_element_is_tried_again():
    calls = []

    def read() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise StaleElementReferenceException("redrawn")
        return "Idle"

    assert read_page(read) == "Idle"
    assert len(calls) == 3


def test_a_read_that_always_meets_redrawn_elements_fails_after_its_tries():
    calls = []

    def read() -> str:
        calls.append(1)
        raise StaleElementReferenceException("redrawn")

    with pytest.raises(StaleElementReferenceException):
        read_page(read, tries=2)
    assert len(calls) == 2
