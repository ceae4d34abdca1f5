"""One student's lab in a container, started as a student starts it: scripts/lab-container.sh
(marker ``hub``: Docker and the lab image, which `make test` builds for the hub's stage).

Checked: the URL it prints answers with the token and sends to the login page without it;
the port is published on 127.0.0.1 only; the container runs as a user other than root with
no capability, no new privileges and the kit's seccomp profile, is not privileged; the
student notebooks land in the mounted work folder and a lab's measurements are saved there;
a notebook's kernel, started through JupyterLab's own API, runs a lab with link delay (in
the lab VM inside the container where the host's kernel has no netem) and saves its
measurements in the work folder; Ctrl-C stops it and leaves no container.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator, Tuple

import pytest
import websocket
from hub_machine import DOCKER, ROOT, DockerDaemon, docker, free_port
from kernel_channel import ask, channels, delayed_ping_code, execute, start_kernel, stop_kernel

from labtools.model import expect
from labtools.model.catalog import load_topology

pytestmark = [pytest.mark.hub]

OUT = ROOT / "results" / "hub"
READY_S = 180
#: seconds for a kernel to answer (in the lab VM: its boot under emulation, then ipykernel)
KERNEL_S = 300
#: a lab with link delay (netem: the lab VM's where the host's kernel has none)
DELAYED = "star,hosts=3,bw_mbps=10,delay_ms=5"


@pytest.fixture(scope="module")
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[Tuple[str, Path, str, "subprocess.Popen[str]"]]:
    if "hub" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the lab in a container runs with -m hub (make test's hub stage)")
    OUT.mkdir(parents=True, exist_ok=True)
    with DockerDaemon(OUT / "dockerd-lab.log"):
        docker("image", "inspect", "labtools-lab:latest")  # built by the hub's stage
        work = tmp_path_factory.mktemp("work") / "lab-work"
        port = free_port()
        env = dict(os.environ, LAB_PORT=str(port), LAB_WORK=str(work))
        env.pop("JUPYTER_TOKEN", None)
        proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "lab-container.sh")],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
                                start_new_session=True)
        lines = []
        url = ""
        deadline = time.monotonic() + READY_S
        assert proc.stdout is not None
        while not url and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"\[lab\] open (http://127\.0\.0\.1:\d+/lab\?token=\w+)", line)
            url = found.group(1) if found else ""
        assert url, "".join(lines)
        try:
            yield url, work, str(port), proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, as a student stops it
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            (OUT / "lab-container.log").write_text("".join(lines) + (proc.stdout.read() or ""))


def answer(url: str) -> Tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.geturl()
    except urllib.error.HTTPError as err:
        return err.code, url
    except OSError:
        return 0, url


def container_of(port: str) -> str:
    names = docker("ps", "--filter", f"publish={port}", "--format", "{{.Names}}").split()
    assert len(names) == 1, names
    return names[0]


def server_log(port: str, lines: int = 40) -> str:
    """The last lines JupyterLab's server and the lab VM printed in the container."""
    run = subprocess.run([DOCKER, "logs", "--tail", str(lines), container_of(port)],
                         capture_output=True, text=True, timeout=60)
    return run.stdout + run.stderr


def test_the_printed_address_answers_with_its_token_only(lab):
    url, _, port, _ = lab
    deadline = time.monotonic() + READY_S
    while answer(url.replace("/lab?", "/api/status?"))[0] != 200:
        assert time.monotonic() < deadline, "JupyterLab did not answer"
        time.sleep(2)
    status, landed = answer(url.split("?")[0])
    assert status == 200 and "/login" in landed
    assert answer(url.replace("/lab?", "/api/contents?").rsplit("=", 1)[0] + "=wrong")[0] == 403
    info = json.loads(docker("inspect", container_of(port)))[0]
    bindings = info["HostConfig"]["PortBindings"]["8888/tcp"]
    assert bindings == [{"HostIp": "127.0.0.1", "HostPort": port}]


def test_the_container_is_unprivileged(lab):
    _, _, port, _ = lab
    name = container_of(port)
    host = json.loads(docker("inspect", name))[0]["HostConfig"]
    assert host["CapDrop"] == ["ALL"] and not host["CapAdd"] and not host["Privileged"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert any(o.startswith("seccomp=") for o in host["SecurityOpt"])
    status = subprocess.run([DOCKER, "exec", name, "sh", "-c",
                             "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status"],
                            capture_output=True, text=True, timeout=60).stdout
    assert status.split()[0] != "0"
    assert "CapEff:\t0000000000000000" in status and "NoNewPrivs:\t1" in status
    assert "Seccomp:\t2" in status


def test_notebooks_and_measurements_are_saved_in_the_work_folder(lab):
    _, work, port, _ = lab
    assert (work / "00-getting-started.ipynb").is_file()
    run = subprocess.run(
        [DOCKER, "exec", container_of(port), "python", "-c",
         "from labtools.lab import probes\n"
         "from labtools.lab.session import LabSession\n"
         "with LabSession('star,hosts=3,bw_mbps=50', results='results/labtools.sqlite',"
         " calibrate=False) as lab:\n"
         "    print(probes.ping(lab, 'h1', 'h2', count=3, interval_s=0.2).summary.received)\n"],
        capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "3", run.stderr[-1500:]
    assert (work / "results" / "labtools.sqlite").stat().st_size > 0


def test_a_notebook_kernel_runs_a_delayed_lab_and_saves_it(lab):
    url, work, port, _ = lab
    base, token = url.split("/lab?token=")
    mode = subprocess.run([DOCKER, "exec", container_of(port), "labtools-container-check",
                           "--mode"], capture_output=True, text=True, timeout=60).stdout.strip()
    began = time.monotonic()  # the kernel starts; the websocket opens once it answers
    kernel = start_kernel(base, token)
    ws = channels(base, token, kernel, KERNEL_S)
    try:
        info = None
        while info is None and time.monotonic() - began < KERNEL_S:
            try:
                info, _ = ask(ws, "kernel_info_request", {}, 10)
            except websocket.WebSocketConnectionClosedException:
                pytest.fail(f"the server closed the kernel's websocket after "
                            f"{time.monotonic() - began:.0f} s:\n{server_log(port)}")
        assert info is not None, (f"the kernel did not answer within {KERNEL_S} s:\n"
                                  f"{server_log(port)}")
        (OUT / "lab-container-kernel.txt").write_text(
            f"mode {mode}; kernel answered after {time.monotonic() - began:.1f} s\n")
        code = ("from labtools import settings\n"
                + delayed_ping_code(DELAYED, "results/delayed.sqlite")
                + "print('in-vm', settings.current().in_vm, 'min', ping.summary.min_ms)\n")
        reply, printed = execute(ws, code, 300)
        assert reply is not None and reply["content"]["status"] == "ok", printed[-1500:]
    finally:
        ws.close()
        stop_kernel(base, token, kernel)
    words = printed.split()
    assert words[:2] == ["in-vm", str(mode == "vm")], (mode, printed)
    assert float(words[3]) >= expect.rtt_ms(load_topology(DELAYED), "h1", "h2"), printed
    assert (work / "results" / "delayed.sqlite").stat().st_size > 0


def test_ctrl_c_stops_it_and_leaves_no_container(lab):
    _, _, port, proc = lab
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(60)
    deadline = time.monotonic() + 30
    while docker("ps", "-a", "--filter", f"publish={port}", "--format", "{{.Names}}").strip():
        assert time.monotonic() < deadline, "the container is still there"
        time.sleep(1)
