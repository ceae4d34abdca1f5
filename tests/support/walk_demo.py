"""The live demonstration's panel driven in a real browser, as an instructor drives it.

Not a test of the suite (minutes under software emulation): a script run before a class::

    .venv/bin/python tests/support/walk_demo.py [--preset bufferbloat] [--out results/walk-demo]

The instructor's lab started as `make lab` starts it (``LABTOOLS_MODE=instructor
scripts/lab.sh``: in the lab VM where this kernel cannot delay packets), a notebook that
starts the reference network and shows ``LivePanel(lab)``, opened in headless Chromium; its
cells run one by one (Shift+Enter), the preset started with the panel's Start button, L1's
delay slider moved with the keyboard ``--change-after-s`` seconds later, while the preset
still runs, Stop pressed once it has ended, and a last cell reads the demonstration back
from the results store: the slider's change with its time, whether the panel marked it,
the samples before and after it (with the knob they saw) and how the ping's RTT followed
(:func:`labtools.lab.live_plan.rtt_follow`), and the sampling's numbers (the panel's "too
slow" note where it could not keep up). Kept in ``--out``: screenshots after the start,
after the change and at the end, the notebook as the browser saved it, and ``demo.json``
(the panel's status line, how many times its plot was redrawn, when the slider moved, and
the last cell's lines).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_process import Lab, free_port, lab_running  # noqa: E402
from page_reading import read_page, wait_for  # noqa: E402
from walk_labs import READY_TIMEOUT_S, browser, save_and_stop, wait_kernel_idle  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: the last cell: the demonstration as the store has it, the slider's change and what
#: followed it
READ_BACK = """\
from labtools.lab.live_plan import rtt_follow
from labtools.teach.live_panel import series

demo = panel.demo
events = lab.store.live_events(demo_id=demo.demo_id)
print("events by kind:", {k: sum(e.kind == k for e in events) for k in sorted({e.kind for e in events})})
changes = [e for e in events if e.kind == "change"]
print("changes:", [(e.t_s, e.values.get("text"), e.values.get("refused")) for e in changes])
print("marked in the plots:", series(events)["changes"])
moved = [e for e in changes if "delay_ms" in e.values.get("knobs", {})]
samples = [e for e in events if e.kind == "sample"]
print(f"samples: {len(samples)}, median interval {demo.median_interval_s()} s, "
      f"intervals {[round(g, 1) for g in demo.intervals_s]}")
print("too slow note:", demo.slow_note())
if not moved:
    print("the slider's change was not recorded")
else:
    first, last = moved[0], moved[-1]
    link, knob = last.values["link"], "delay_ms"
    before = [e for e in samples if e.t_s < first.t_s]
    after = [e for e in samples if e.t_s > last.t_s]
    print(f"slider: {len(moved)} changes " + ", ".join(
        f"{e.values['text']} (asked {e.values['asked_t_s']:.2f} s, applied {e.t_s:.2f} s)"
        for e in moved))
    print(f"samples before {len(before)} (last at {before[-1].t_s if before else '-'} s), "
          f"after {len(after)} (first at {after[0].t_s if after else '-'} s)")
    print(f"{link} {knob} in the samples after it:",
          sorted({e.values["knobs"][link][knob] for e in after}))
    flow = next(iter(last.values["expected"]), None)
    old = before[-1].values["expected"].get(flow, {}).get("rtt_ms") if before else None
    if flow is not None and old is not None:
        new = last.values["expected"][flow]["rtt_ms"]
        replies = [(at, rtt) for e in samples for label, got in e.values["pings"].items()
                   for at, rtt in got]
        print(rtt_follow(replies, first.values["asked_t_s"], old, new).describe())
        print("other changes meanwhile:", [e.values.get("text") for e in changes
                                           if e not in moved and e.t_s > first.t_s])
lab.stop()
"""
CELLS = [
    "from labtools.lab.session import LabSession\n"
    "lab = LabSession(\"portfolio\", results=\"results/labtools.sqlite\")\n"
    "lab.start()",
    "from labtools.teach.live_panel import LivePanel\n"
    "panel = LivePanel(lab, preset=PRESET)\npanel",
    READ_BACK,
]
CELL_TIMEOUT_S = 900


def notebook(preset: str) -> Dict[str, Any]:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": f"PRESET = {preset!r}\n" + CELLS[0]}]
    cells += [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
               "source": text} for text in CELLS[1:]]
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)",
                                                         "language": "python",
                                                         "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def run_cell(driver: Any, index: int) -> float:
    """Click cell ``index``, Shift+Enter; seconds until its prompt shows a number."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    cells = driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell")
    cells[index].find_element(By.CSS_SELECTOR, ".jp-InputArea-editor").click()
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
    start = time.monotonic()
    while time.monotonic() - start < CELL_TIMEOUT_S:
        prompt = read_page(lambda: driver.find_elements(
            By.CSS_SELECTOR, ".jp-NotebookPanel .jp-CodeCell")[index].find_element(
                By.CSS_SELECTOR, ".jp-InputPrompt").get_attribute("textContent") or "")
        if "[" in prompt and "*" not in prompt and prompt.strip() != "[ ]:":
            return time.monotonic() - start
        time.sleep(2)
    raise TimeoutError(f"cell {index} did not finish within {CELL_TIMEOUT_S} s")


def panel_state(driver: Any) -> Dict[str, Any]:
    from selenium.webdriver.common.by import By

    panel = driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox")[-1]
    images = panel.find_elements(By.CSS_SELECTOR, "img")
    return {"text": panel.text[:600],
            "plot_src": (images[0].get_attribute("src") or "")[-64:] if images else ""}


def click_button(driver: Any, label: str) -> None:
    from selenium.webdriver.common.by import By

    panel = driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox")[-1]
    buttons = [b for b in panel.find_elements(By.CSS_SELECTOR, "button")
               if b.text.strip() == label]
    if not buttons:
        raise AssertionError(f"the panel has no {label} button: {panel.text[:300]}")
    buttons[0].click()


def move_slider(driver: Any, description: str, presses: int) -> None:
    """Focus the handle of the slider ``description`` and press the right arrow
    ``presses`` times (ipywidgets applies it on release: continuous_update is off)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    for slider in driver.find_elements(By.CSS_SELECTOR, ".widget-slider"):
        if description in slider.text:
            handle = slider.find_element(By.CSS_SELECTOR, ".noUi-handle")
            handle.click()
            for _ in range(presses):
                handle.send_keys(Keys.ARROW_RIGHT)
            handle.send_keys(Keys.TAB)
            return
    raise AssertionError(f"no slider {description!r}")


def redraws(driver: Any, seconds: float) -> List[str]:
    """The plot's sources seen over ``seconds`` (a new one each time it is redrawn)."""
    seen: List[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        src = panel_state(driver)["plot_src"]
        if src and (not seen or seen[-1] != src):
            seen.append(src)
        time.sleep(1)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="bufferbloat")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "walk-demo")
    parser.add_argument("--change-after-s", type=float, default=15.0,
                        help="seconds after Start when the slider moves (the presets run "
                        "40-50 s)")
    parser.add_argument("--watch-s", type=float, default=45.0,
                        help="seconds the panel is watched after the slider moved")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    name = "live-demo.ipynb"
    (args.out / name).write_text(json.dumps(notebook(args.preset), indent=1))
    lab = Lab(free_port(), ROOT, ["bash", "scripts/lab.sh"], mode="instructor")
    driver = browser()
    found: Dict[str, Any] = {}
    try:
        with lab_running(lab, READY_TIMEOUT_S, ROOT / ".venv" / "bin" / "labtools",
                         args.out / "make-lab.log") as (_, url):
            base, token = url.split("/lab?token=")[0], url.split("token=")[1]
            rel = args.out.relative_to(ROOT) / name
            driver.get(f"{base}/lab/tree/{rel}?token={token}")
            wait_for(driver, ".jp-NotebookPanel .jp-Cell", 180)
            wait_kernel_idle(driver, 600)
            found["start_network_s"] = round(run_cell(driver, 0))
            found["show_panel_s"] = round(run_cell(driver, 1))
            click_button(driver, "Start")
            started = time.monotonic()
            found["redraws_before_change"] = len(redraws(driver, args.change_after_s))
            driver.save_screenshot(str(args.out / "1-started.png"))
            found["slider_moved_s"] = round(time.monotonic() - started, 1)
            move_slider(driver, "delay ms", 20)
            found["redraws_after_change"] = len(redraws(driver, args.watch_s))
            driver.save_screenshot(str(args.out / "2-changed.png"))
            click_button(driver, "Stop")
            time.sleep(10)
            found["panel"] = panel_state(driver)["text"]
            found["read_back_s"] = round(run_cell(driver, 2))
            driver.save_screenshot(str(args.out / "3-stopped.png"))
            save_and_stop(driver, base, token)
    finally:
        driver.quit()
        saved = json.loads((args.out / name).read_text())
        read_back = next((c for c in saved["cells"] if "rtt_follow" in "".join(c["source"])),
                         {"outputs": []})
        found["last_cell"] = "".join("".join(o.get("text", "")) for o in read_back["outputs"]
                                     ).splitlines()
        (args.out / "demo.json").write_text(json.dumps(found, indent=1))
        print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
