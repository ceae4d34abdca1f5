"""The student edition started as a student starts it: `labtools bundle --students DIR`,
then `make lab` in DIR (its own Makefile: the kit's setup script makes DIR/.venv with the
edition installed, then the kit's lab script starts JupyterLab, in the lab VM when this
kernel cannot emulate links).

Checked: `make lab` prints the address once the lab answers; the address answers with its
token only; the workspace holds the student notebooks; a notebook's kernel, started through
JupyterLab's own API, imports the kit from the edition, knows it is on a course, cannot read
the source of lab 7's answer, and runs a lab with link delay whose measurements it saves in
the workspace; Ctrl-C stops it.

Marker ``browser`` (`make test`'s browser stage, `make test-browser`): minutes (the
edition's venv from pip's cache, the lab VM's boot, JupyterLab under emulation).
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator, Tuple

import pytest
from kernel_channel import ask, channels, delayed_ping_code, execute, open_notebook, stop_kernel
from lab_process import Lab, free_port, lab_running

from labtools.model import expect
from labtools.model.catalog import load_topology

pytestmark = [pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "results" / "edition"
#: how long `make lab` may take to answer: the edition's venv, the VM's boot, JupyterLab
READY_TIMEOUT_S = 900
#: how long the kernel in the lab VM may take to answer
KERNEL_S = 600
#: the student notebook whose kernel the test starts (in the workspace)
NOTEBOOK = "00-getting-started.ipynb"
#: a lab with link delay, built in the kernel
DELAYED = "star,hosts=3,bw_mbps=10,delay_ms=5"


@pytest.fixture(scope="module")
def edition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("edition") / "netlab"
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "labtools"), "bundle", "--students",
                           str(folder)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="module")
def lab(edition: Path) -> Iterator[Tuple[Lab, str]]:
    OUT.mkdir(parents=True, exist_ok=True)
    running = Lab(free_port(), edition, ["make", "lab"], env={"LABTOOLS_VENV": ""})
    with lab_running(running, READY_TIMEOUT_S, edition / ".venv" / "bin" / "labtools",
                     OUT / "make-lab.log") as started:
        yield started


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_make_lab_in_the_edition_answers_with_its_token_only(lab, edition):
    running, url = lab
    base, token = url.split("/lab?token=")
    assert status(f"{base}/api/status?token={token}") == 200
    assert status(f"{base}/api/status") == 403
    notebooks = sorted(p.name for p in (edition / "workspace").glob("*.ipynb"))
    assert notebooks == sorted(p.name for p in (edition / "notebooks").glob("*.ipynb"))
    assert (edition / ".venv" / "bin" / "labtools").exists()
    assert not (edition / "solutions").exists()
    at_start, _ = running.wait_line(r"\[lab\] starting", 1)
    at_ready, _ = running.wait_line(r"\[lab\] ready: ", 1)
    print(f"the edition's make lab (a student's lab): 'ready' {at_ready - at_start:.0f} s "
          f"after 'starting' ({at_ready:.0f} s after make lab, which made its venv first)")


def test_a_kernel_of_the_editions_lab_is_on_a_course_and_measures(lab, edition):
    _, url = lab
    base, token = url.split("/lab?token=")
    began = time.monotonic()
    kernel = open_notebook(base, token, NOTEBOOK)  # in the workspace, as a student opens it
    ws = channels(base, token, kernel, KERNEL_S)
    try:
        info = None
        while info is None and time.monotonic() - began < KERNEL_S:
            info, _ = ask(ws, "kernel_info_request", {}, 10)
        assert info is not None, f"the kernel did not answer within {KERNEL_S} s"
        answered_s = time.monotonic() - began
        code = ("import inspect, labtools\nfrom labtools import settings\n"
                "from labtools.tools.simpleperf import server\n"
                "print('package', labtools.__file__)\n"
                "print('on-course', settings.current().on_course)\n"
                "try:\n    inspect.getsource(server.Server)\n    print('source shown')\n"
                "except OSError:\n    print('source absent')\n"
                + delayed_ping_code(DELAYED, "results/edition.sqlite")
                + "print('min', ping.summary.min_ms)\n")
        reply, printed = execute(ws, code, 300)
        assert reply is not None and reply["content"]["status"] == "ok", printed[-1500:]
    finally:
        ws.close()
        stop_kernel(base, token, kernel)
    (OUT / "kernel.txt").write_text(f"kernel answered after {answered_s:.1f} s\n{printed}")
    lines = dict(line.split(" ", 1) for line in printed.strip().splitlines())
    assert Path(lines["package"]).is_relative_to(edition), printed
    assert lines["on-course"] == "True" and lines["source"] == "absent", printed
    assert float(lines["min"]) >= expect.rtt_ms(load_topology(DELAYED), "h1", "h2"), printed
    assert (edition / "workspace" / "results" / "edition.sqlite").stat().st_size > 0


def test_ctrl_c_stops_the_editions_lab(lab, edition):
    running, url = lab
    base, token = url.split("/lab?token=")
    running.stop(edition / ".venv" / "bin" / "labtools")
    assert running.proc.returncode is not None
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=10)
