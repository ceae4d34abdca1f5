"""A student's first ten minutes, in a real browser: JupyterLab started exactly as `make lab`
starts it (scripts/lab.sh: inside the lab VM when this kernel cannot emulate links, the port
forwarded from 127.0.0.1), driven by headless Chromium through Selenium.

What it checks is what a student sees: the login page without the token, the lab with it,
notebook 00 opened from the file browser and run to the end without an error cell, the
topology drawing and the RTT plot as images, the measurement panel as a live widget whose
Run shows a table and a plot in place, and none of what newcomers met before (a "Select
Kernel" dialog, the Jupyter news pop-up, the font-cache message, ping times printed as
1.795339e+09). A screenshot of the finished notebook is kept in results/browser/.

Marker ``browser``: minutes (the lab VM boots and JupyterLab starts under emulation).
"""

from __future__ import annotations

import re
import shutil
import time
import urllib.request
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest
from lab_process import Lab, free_port, lab_running
from page_reading import click_text, read_page, texts, wait_for

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "results" / "browser"
NOTEBOOK = "00-getting-started.ipynb"
#: how long the lab may take to answer after `make lab` (VM boot + JupyterLab under TCG)
READY_TIMEOUT_S = 900
#: how long "run all cells" of notebook 00 may take (it builds the network: minutes in TCG)
RUN_ALL_TIMEOUT_S = 900
PANEL_RUN_TIMEOUT_S = 300
KERNEL_START_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def lab() -> Iterator[Tuple[Lab, str]]:
    if shutil.which("chromium") is None or shutil.which("chromedriver") is None:
        pytest.fail("chromium and chromium-driver are missing: run scripts/setup.sh --test")
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "solutions" / NOTEBOOK, SHOTS / NOTEBOOK)  # run a copy, not the source
    shutil.rmtree(SHOTS / "results", ignore_errors=True)
    running = Lab(free_port(), ROOT, ["bash", "scripts/lab.sh"], mode="instructor")
    with lab_running(running, READY_TIMEOUT_S, ROOT / ".venv" / "bin" / "labtools",
                     SHOTS / "make-lab.log") as started:
        yield started


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1400,2400", "--disable-gpu"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # kept in console.log
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


def test_make_lab_says_starting_at_once_and_ready_only_when_it_answers(lab):
    running, url = lab
    at_start, _ = running.wait_line(r"\[lab\] starting", 30)
    at_ready, _ = running.wait_line(r"\[lab\] ready: ", 1)
    assert at_start < 15, f"'starting' came {at_start:.0f} s after make lab"
    with urllib.request.urlopen(url.replace("/lab?", "/api/status?"), timeout=30) as reply:
        assert reply.status == 200  # it answers the moment it says ready
    print(f"make lab: 'starting' after {at_start:.1f} s, 'ready' after {at_ready:.0f} s")


def test_without_the_token_the_login_page_with_it_the_lab(lab, browser):
    from selenium.webdriver.common.by import By

    _, url = lab
    browser.get(url.split("?")[0])
    assert "/login" in browser.current_url
    assert browser.find_elements(By.CSS_SELECTOR, "input[type=password]")
    browser.get(url)
    wait_for(browser, "#jp-main-dock-panel", 120)
    assert "/login" not in browser.current_url


def open_from_file_browser(driver, *parts: str) -> None:
    for part in parts:
        deadline = time.monotonic() + 60
        while True:
            try:
                click_text(driver, ".jp-DirListing-itemText", part, double=True)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        time.sleep(1)


def wait_kernel_idle(driver, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        items = texts(driver, ".jp-StatusBar-TextItem")
        if any(re.search(r"\(ipykernel\) \| Idle$", t.strip()) for t in items):
            return
        time.sleep(1)
    raise AssertionError(f"the kernel was not idle within {timeout_s:.0f} s")


def dialogs(driver) -> List[str]:
    return [text for text in texts(driver, ".jp-Dialog") if text]


def toasts(driver) -> List[str]:
    return texts(driver, ".Toastify__toast")


@pytest.fixture(scope="module")
def finished(lab, browser):
    """Notebook 00 opened from the file browser and run with "Run All", as a student does:
    the network stays up after the last cell, so the measurement panel has one."""
    from selenium.webdriver.common.by import By

    _, url = lab
    browser.get(url)
    wait_for(browser, ".jp-DirListing-content", 120)
    open_from_file_browser(browser, "results", "browser", NOTEBOOK)
    wait_for(browser, ".jp-NotebookPanel .jp-Cell", 120)
    print(f"notebook open; dialogs {dialogs(browser)}", flush=True)
    # As a student does: wait until the status bar says the kernel is idle ("Python 3
    # (ipykernel) | Idle"); under software emulation the kernel takes 20-30 s to start, and
    # "Run All" before that makes JupyterLab ask which kernel to start.
    wait_kernel_idle(browser, KERNEL_START_TIMEOUT_S)
    seen = {"dialogs": dialogs(browser), "toasts": toasts(browser)}
    click_text(browser, ".lm-MenuBar-itemLabel", "Run")
    click_text(browser, ".lm-Menu-itemLabel", "Run All Cells")
    start = time.monotonic()
    time.sleep(5)
    while time.monotonic() - start < RUN_ALL_TIMEOUT_S:
        prompts = read_page(lambda: [p.get_attribute("textContent") or "" for p in
                                     browser.find_elements(By.CSS_SELECTOR, ".jp-InputPrompt")])
        idle = browser.find_elements(By.CSS_SELECTOR,
                                     ".jp-Notebook-ExecutionIndicator[data-status='idle']")
        if idle and not any("*" in p for p in prompts):
            break
        time.sleep(3)
    else:
        raise AssertionError(f"run all cells did not finish within {RUN_ALL_TIMEOUT_S} s")
    seen["run_all_s"] = f"{time.monotonic() - start:.0f}"
    print(f"notebook 00 ran all its cells in {seen['run_all_s']} s", flush=True)
    seen["dialogs"] += dialogs(browser)
    seen["toasts"] += toasts(browser)
    browser.save_screenshot(str(SHOTS / "notebook-00-finished.png"))
    (SHOTS / "console.log").write_text("\n".join(
        f"{entry['level']} {entry['message']}" for entry in browser.get_log("browser")) + "\n")
    return seen


def outputs(driver, mime: str) -> List[str]:
    from selenium.webdriver.common.by import By

    return read_page(lambda: [o.get_attribute("textContent") or "" for o in driver.find_elements(
        By.CSS_SELECTOR, f".jp-OutputArea-output[data-mime-type='{mime}']")])


def test_run_all_finishes_without_an_error_cell_or_red_text(finished, browser):
    errors = outputs(browser, "application/vnd.jupyter.stderr")
    assert not errors, f"red output under cells: {[e[:300] for e in errors]}"
    assert not any("font cache" in t for t in errors)


def test_no_kernel_dialog_and_no_news_pop_up(finished):
    assert not finished["dialogs"], finished["dialogs"]
    assert not any("news" in t.lower() for t in finished["toasts"]), finished["toasts"]


def test_the_topology_drawing_and_the_rtt_plot_are_images(finished, browser):
    from selenium.webdriver.common.by import By

    images = [i for i in browser.find_elements(By.CSS_SELECTOR, ".jp-RenderedImage img")
              if int(i.get_attribute("naturalWidth") or 0) > 100]
    assert len(images) >= 2, f"{len(images)} plot(s) rendered"


def test_ping_times_are_times_not_floats(finished, browser):
    text = browser.find_element("css selector", ".jp-NotebookPanel").text
    assert not re.search(r"\d\.\d+e\+09", text)


def test_the_measurement_panel_is_a_live_widget_that_runs(finished, browser):
    from selenium.webdriver.common.by import By

    text = " ".join(texts(browser, ".jp-OutputArea"))
    assert "Loading widget" not in text and "MeasurementPanel(" not in text
    panels = browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox")
    assert panels, "the measurement panel did not render as a widget"
    panel = panels[-1]
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'});", panel)
    run = [b for b in panel.find_elements(By.CSS_SELECTOR, "button") if b.text.strip() == "Run"]
    assert run, "the panel has no Run button"
    run[0].click()
    deadline = time.monotonic() + PANEL_RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        if panel.find_elements(By.CSS_SELECTOR, "table") and \
                panel.find_elements(By.CSS_SELECTOR, "img"):
            break
        time.sleep(2)
    else:
        raise AssertionError("the panel's run showed no table and plot: " + panel.text[-500:])
    assert "done:" in panel.text
    browser.save_screenshot(str(SHOTS / "notebook-00-panel.png"))
