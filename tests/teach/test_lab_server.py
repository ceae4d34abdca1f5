"""JupyterLab's kernel list while a kernel starts (the "Select Kernel" dialog on first open).

A real kernel (ipykernel) is started by jupyter_server's own manager while the kernel list
is read as JupyterLab polls it. jupyter_server's manager fails on a starting kernel; the
kit's does not. Both scripts that start JupyterLab use the kit's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import List, Tuple, Type

import pytest
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from traitlets import TraitError

from labtools.teach.lab_server import KERNEL_INFO_TIMEOUT_S, LabKernelManager

ROOT = Path(__file__).resolve().parents[2]


def list_while_starting(manager_class: Type[AsyncMappingKernelManager]) -> Tuple[int, List]:
    """Start a real kernel; list kernels as often as possible until the start returns."""

    async def run() -> Tuple[int, List]:
        manager = manager_class()
        start = asyncio.ensure_future(manager.start_kernel(kernel_name="python3"))
        failures, listed = 0, []
        while not start.done():
            try:
                listed.append(manager.list_kernels())
            except TraitError:
                failures += 1
            await asyncio.sleep(0)
        kernel_id = await start
        listed.append(manager.list_kernels())
        await manager.shutdown_kernel(kernel_id, now=True)
        return failures, listed

    return asyncio.run(run())


def test_jupyter_servers_manager_fails_on_a_starting_kernel():
    failures, _ = list_while_starting(AsyncMappingKernelManager)
    assert failures > 0  # the race the kit's manager closes; if it is gone upstream, drop ours


def test_the_kits_manager_lists_a_starting_kernel_with_an_activity_time():
    failures, listed = list_while_starting(LabKernelManager)
    assert failures == 0
    started = [kernels for kernels in listed if kernels]
    assert started, "the kernel never appeared in the list"
    for kernels in started:
        assert all(k["last_activity"] and k["name"] == "python3" for k in kernels)


def test_a_kernel_booting_the_lab_vm_has_longer_than_jupyter_servers_minute():
    """The websocket's wait for the first answer is the manager's (jupyter_server reads
    ``multi_kernel_manager.kernel_info_timeout``); over 120 s closed it in a CI run."""
    assert AsyncMappingKernelManager().kernel_info_timeout == 60
    assert LabKernelManager().kernel_info_timeout == KERNEL_INFO_TIMEOUT_S >= 300


@pytest.mark.parametrize("script", ["scripts/lab.sh", "scripts/lab-service.sh",
                                    "deploy/image/bin/labtools-lab",
                                    "deploy/image/bin/labtools-hub-server"])
def test_jupyterlab_is_started_with_the_kits_manager(script):
    option = f"--ServerApp.kernel_manager_class={LabKernelManager.__module__}.LabKernelManager"
    assert option in (ROOT / script).read_text()


_NODE_CALLS = """
import subprocess, sys
seen = []
real = subprocess.check_output
def spy(argv, *a, **k):
    seen.append(str(argv[0]))
    return real(argv, *a, **k)
subprocess.check_output = spy
if sys.argv[1] == "skip":
    from labtools.teach.lab_server import skip_yarn_config
    skip_yarn_config()
import jupyterlab.labapp
print(sum("node" in s for s in seen))
"""


@pytest.mark.parametrize("how", ["skip", "plain"])
def test_the_lab_starts_without_asking_node_for_npms_registry(how):
    """Importing JupyterLab runs ``node yarn.js config`` where Node.js is installed (18.6 s in
    the lab VM under emulation); the lab's launcher skips it. The plain import shows that the
    check sees the call where it happens (skipped where this machine has no Node.js)."""
    import shutil
    import subprocess
    import sys

    if how == "plain" and shutil.which("node") is None:
        pytest.skip("no Node.js here: JupyterLab never calls it")
    proc = subprocess.run([sys.executable, "-c", _NODE_CALLS, how], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1500:]
    calls = int(proc.stdout.split()[-1])
    assert calls == (0 if how == "skip" else 1), proc.stdout


def test_jupyter_starts_without_building_the_iri_grammar():
    """setup.sh removes rfc3987-syntax, whose Lark grammar jsonschema built at every start of
    JupyterLab and of every nbgrader command (1.6 s here, 36 s in the lab VM); jsonschema then
    skips only the "iri" format check. Checked in a venv that setup.sh made."""
    import subprocess
    import sys

    if not (Path(sys.prefix) / ".labtools-installed").exists():
        pytest.skip("this venv was not made by scripts/setup.sh")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c",
                           "import jupyter_server.serverapp, nbgrader.apps, jsonschema"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert "jsonschema._format" in proc.stderr  # the module that would import it
    assert "rfc3987_syntax.syntax_helpers" not in proc.stderr  # an attempt is listed, not this


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_deferred_modules_are_the_configs_or_a_students_two():
    """``DeferredExtensions.modules`` names the extensions; missing or not a list of names:
    a student's two."""
    from labtools.teach.deferred_extensions import DEFERRED, deferred_modules

    named = ["nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"]
    assert deferred_modules({"DeferredExtensions": {"modules": named}}) == tuple(named)
    for config in ({}, {"DeferredExtensions": {}}, {"DeferredExtensions": {"modules": []}},
                   {"DeferredExtensions": {"modules": "nbgrader"}},
                   {"DeferredExtensions": {"modules": [3]}}, {"DeferredExtensions": 1}, None):
        assert deferred_modules(config) == DEFERRED


#: each lab's config, and what answers 404 until its deferred extensions are loaded
LAB_CONFIGS = {
    "student": ("deploy/image/etc/labtools/jupyter/student", ("assignment_list",
                                                             "validate_assignment")),
    "instructor": ("deploy/lab/instructor", ("formgrader", "course_list", "assignment_list",
                                             "validate_assignment")),
}


@pytest.mark.parametrize("mode", sorted(LAB_CONFIGS))
def test_a_lab_answers_before_nbgrader_and_then_has_it(tmp_path, mode):
    """A student's and an instructor's JupyterLab (their configs, started as make lab starts
    them) answer before nbgrader is imported; the assignment list (and the instructor's
    formgrader) answer soon after, from nbgrader's own handlers (not 404), and the log says
    each extension was loaded later."""
    import os
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    port, token = _free_port(), "t0k3n"
    config_dir, deferred = LAB_CONFIGS[mode]
    env = dict(os.environ, JUPYTER_CONFIG_PATH=str(ROOT / config_dir), JUPYTER_TOKEN=token,
        HOME=str(tmp_path), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        lab = subprocess.Popen([sys.executable, "-m", "labtools.teach.lab_server",
                                "--no-browser", "--allow-root", f"--port={port}",
                                "--ServerApp.port_retries=0",
                                f"--ServerApp.root_dir={tmp_path}"],
                               env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        def status(path: str) -> int:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}?token={token}"
                                            "&course_id=none", timeout=10) as reply:
                    return int(reply.status)
            except urllib.error.HTTPError as exc:
                return exc.code
            except OSError:
                return 0

        deadline = time.monotonic() + 180
        while status("api/status") != 200:
            assert lab.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.5)
        while status("assignments") == 404:
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.5)
        assert status("assignments") == 200
        if "formgrader" in deferred:
            assert status("formgrader") not in (0, 404)
        text = log.read_text()
        for name in deferred:
            assert f"nbgrader.server_extensions.{name} loaded once the server ran" in text
        assert "took" not in [line for line in text.splitlines() if "nbgrader" in line][0]
        # the server was serving before nbgrader's extensions were loaded into it
        assert text.index("is running at") < text.index("assignment_list loaded once")
    finally:
        lab.terminate()
        lab.wait(timeout=60)
