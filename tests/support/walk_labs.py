"""Labs done as a student does them, in a real browser, from the student edition.

Not a test of the suite (an hour under software emulation): a script an instructor or a
developer runs before adopting a change to the labs::

    .venv/bin/python tests/support/walk_labs.py [--quick] [--labs 01 02 ...] [--out results/walk]

What it does, as a student would: `labtools bundle --students DIR` (the edition a course
hands out), `make lab` in DIR (JupyterLab in the lab VM where this kernel cannot emulate
links), then for each lab: the student's answers written into the workspace's notebook
(every ``# YOUR CODE HERE`` and ``YOUR ANSWER HERE`` cell given the solution's text, as a
student who knows the answers types them), the notebook opened in headless Chromium, the
kernel awaited, "Run All Cells" from JupyterLab's menu, the notebook saved from the page
(Ctrl+S), its kernel shut down. Lab 2 is walked a second time with a wrong first answer
(``--wrong``), to read what a student sees then.

What it keeps, in ``--out``: each notebook as saved from the browser (outputs included), a
screenshot of its end, and ``walk.json``: per lab the seconds Run All took, the cells left
unrun, every red output (stderr and errors) and every output that prints a traceback. It
judges nothing itself: an instructor reads the notebooks and the summary it prints.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_process import Lab, free_port, lab_running  # noqa: E402
from page_reading import click_text, read_page, texts, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LABTOOLS = ROOT / ".venv" / "bin" / "labtools"
READY_TIMEOUT_S = 1200
KERNEL_TIMEOUT_S = 600
RUN_ALL_TIMEOUT_S = 3600
SOLUTION = re.compile(r"[ \t]*### BEGIN SOLUTION\n(.*?)[ \t]*### END SOLUTION\n?", re.S)
STUB = re.compile(r"[ \t]*# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)\n?")


def solution_text(source: str) -> str:
    """What a student who knows the answer writes: the solution's region(s)."""
    return "".join(SOLUTION.findall(source))


def filled_stubs(source: str, solution: str, extra: str = "") -> str:
    """``source`` with its k-th ``# YOUR CODE HERE`` stub replaced by the solution's k-th
    region (a cell can ask for several functions); ``extra`` after the first."""
    regions = iter(SOLUTION.findall(solution))
    first = [True]

    def one(_match: "re.Match[str]") -> str:
        text = next(regions, "")
        if first[0]:
            first[0] = False
            return text + extra
        return text

    return STUB.sub(one, source)


def answered(student: Dict[str, Any], solution: Dict[str, Any], wrong_first: bool) -> int:
    """Fill ``student``'s answer cells from ``solution`` (by nbgrader's grade id); how many.
    ``wrong_first``: lab 2's first answer, the links' RTTs, doubled (a student's slip)."""
    by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): "".join(c["source"])
             for c in solution["cells"] if c["metadata"].get("nbgrader", {}).get("solution")}
    filled = 0
    for cell in student["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        source = "".join(cell["source"])
        if grade_id not in by_id:
            continue
        text = solution_text(by_id[grade_id])
        if cell["cell_type"] == "markdown" and "YOUR ANSWER HERE" in source:
            cell["source"] = text
        elif STUB.search(source):
            slip = ("rtt_link_ms = {k: 2 * v for k, v in rtt_link_ms.items()}\n"
                    if wrong_first and filled == 0 else "")
            cell["source"] = filled_stubs(source, by_id[grade_id], slip)
        else:
            continue
        filled += 1
    return filled


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1400,2000", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(180)
    return driver


def wait_kernel_idle(driver: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(re.search(r"\| Idle$", t.strip()) for t in texts(driver, ".jp-StatusBar-TextItem")):
            return
        time.sleep(2)
    raise TimeoutError(f"the kernel was not idle within {timeout_s:.0f} s")


def run_all(driver: Any) -> float:
    """Run > Run All Cells; seconds until no cell is queued or running."""
    from selenium.webdriver.common.by import By

    click_text(driver, ".lm-MenuBar-itemLabel", "Run")
    click_text(driver, ".lm-Menu-itemLabel", "Run All Cells")
    start = time.monotonic()
    time.sleep(10)
    while time.monotonic() - start < RUN_ALL_TIMEOUT_S:
        prompts = read_page(lambda: [p.get_attribute("textContent") or "" for p in
                                     driver.find_elements(By.CSS_SELECTOR, ".jp-InputPrompt")])
        idle = driver.find_elements(By.CSS_SELECTOR,
                                    ".jp-Notebook-ExecutionIndicator[data-status='idle']")
        if idle and not any("*" in p for p in prompts):
            return time.monotonic() - start
        time.sleep(5)
    raise TimeoutError(f"Run All did not finish within {RUN_ALL_TIMEOUT_S} s")


def save_and_stop(driver: Any, base: str, token: str) -> None:
    """Ctrl+S on the page, then every kernel shut down (as File > Shut Down would)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
    time.sleep(5)
    request = urllib.request.Request(f"{base}/api/kernels?token={token}")
    with urllib.request.urlopen(request, timeout=30) as reply:
        kernels = json.load(reply)
    for kernel in kernels:
        stop = urllib.request.Request(f"{base}/api/kernels/{kernel['id']}?token={token}",
                                      method="DELETE")
        urllib.request.urlopen(stop, timeout=60).close()
    time.sleep(5)


def read_saved(path: Path) -> Dict[str, Any]:
    """Unrun cells, red outputs and tracebacks of the notebook as the browser saved it."""
    nb = json.loads(path.read_text())
    unrun, red, tracebacks = [], [], []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or not "".join(cell["source"]).strip():
            continue
        if cell.get("execution_count") is None:
            unrun.append(index)
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) + "\n".join(out.get("traceback", []))
            if out["output_type"] == "error" or out.get("name") == "stderr":
                red.append(f"cell {index}: {out.get('ename', 'stderr')}: "
                           f"{(out.get('evalue') or text)[:300]}")
            if "Traceback" in text:
                tracebacks.append(f"cell {index}: {text[:300]}")
    return {"unrun": unrun, "red": red, "tracebacks": tracebacks}


def walk(driver: Any, url: str, workspace: Path, name: str, out: Path,
         wrong_first: bool = False) -> Dict[str, Any]:
    """One lab, start to finish, as a student; what the saved notebook shows."""
    student = json.loads((workspace.parent / "notebooks" / name).read_text())  # as handed out
    solution = json.loads((ROOT / "solutions" / name).read_text())
    target = name if not wrong_first else name.replace(".ipynb", "-wrong.ipynb")
    filled = answered(student, solution, wrong_first)
    (workspace / target).write_text(json.dumps(student, indent=1))
    base, token = url.split("/lab?token=")[0], url.split("token=")[1]
    driver.get(f"{base}/lab/tree/{target}?token={token}")
    wait_for(driver, ".jp-NotebookPanel .jp-Cell", 180)
    wait_kernel_idle(driver, KERNEL_TIMEOUT_S)
    seconds = run_all(driver)
    driver.save_screenshot(str(out / target.replace(".ipynb", ".png")))
    save_and_stop(driver, base, token)
    shutil.copy(workspace / target, out / target)
    found = read_saved(out / target)
    return {"notebook": target, "answers_filled": filled, "run_all_s": round(seconds), **found}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labs", nargs="*", default=["01", "02", "03", "04", "05", "06", "07"])
    parser.add_argument("--quick", action="store_true", help="the probes' short durations")
    parser.add_argument("--wrong", nargs="*", default=["02"], choices=["02"],
                        help="labs walked a second time with a wrong first answer")
    parser.add_argument("--wrong-only", action="store_true",
                        help="walk the --wrong labs with the wrong answer only")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "walk")
    parser.add_argument("--edition", type=Path, default=Path("/tmp/walk-edition/netlab"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.edition.exists():
        subprocess.run([str(LABTOOLS), "bundle", "--students", str(args.edition)], check=True)
    lab = Lab(free_port(), args.edition, ["make", "lab"],
              env={"LABTOOLS_VENV": "", "LABTOOLS_QUICK": "1" if args.quick else "0"})
    found: List[Dict[str, Any]] = []
    driver = browser()
    try:
        with lab_running(lab, READY_TIMEOUT_S, args.edition / ".venv" / "bin" / "labtools",
                         args.out / "make-lab.log") as (_, url):
            workspace = args.edition / "workspace"
            for number in args.labs:
                name = next(p.name for p in sorted((ROOT / "notebooks").glob(f"{number}-*.ipynb")))
                walks = [True] if args.wrong_only else [False, True]
                for wrong in (walks if number in args.wrong else [False]):
                    started = time.monotonic()
                    try:
                        found.append(walk(driver, url, workspace, name, args.out, wrong))
                    except (TimeoutError, AssertionError) as err:
                        found.append({"notebook": name, "failed": str(err)})
                    print(f"{name}{' (wrong first answer)' if wrong else ''}: "
                          f"{time.monotonic() - started:.0f} s: {json.dumps(found[-1])[:600]}",
                          flush=True)
                    (args.out / "walk.json").write_text(json.dumps(found, indent=1))
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
