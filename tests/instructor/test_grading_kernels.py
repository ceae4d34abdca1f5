"""Autograde's kernels forked from one that has imported the labs' modules
(labtools.instructor.kernel_forks, labtools.instructor.kernel_fork_manager): real kernels started by
jupyter_client through the kit's kernel manager, as nbgrader starts them.

They must be kernels of their own (the notebook's folder, the environment Jupyter gave,
random numbers of their own), answer Jupyter's interrupt, end when Jupyter kills what it
started, and leave no process behind; with ``LABTOOLS_FORKED_KERNELS=0`` or for another
kernel, Jupyter starts the kernel as before.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict

import pytest

from labtools.instructor import kernel_fork_manager
from labtools.instructor.kernel_fork_manager import ForkingKernelManager

CODE = ("import os, sys, numpy, ipywidgets, comm\n"
        "print(os.getcwd(), os.environ.get('LABTOOLS_VARIANT'), os.getppid(), "
        "'pandas' in sys.modules, numpy.random.randint(1 << 30), "
        "'jupyter.widget.control' in comm.get_comm_manager().targets)")


async def _run(km: ForkingKernelManager, cwd: Path, interrupt: bool) -> Dict[str, Any]:
    await km.start_kernel(cwd=str(cwd), env=dict(os.environ, LABTOOLS_VARIANT="mine"))
    kc = km.client()
    kc.start_channels()
    seen: Dict[str, Any] = {"out": ""}
    try:
        await kc.wait_for_ready(timeout=60)
        reply = await kc.execute_interactive(
            CODE, timeout=30, output_hook=lambda m: seen.__setitem__(
                "out", seen["out"] + m["content"].get("text", "")))
        seen["status"] = reply["content"]["status"]
        if interrupt:
            kc.execute("import time; print('sleeping', flush=True); time.sleep(60)")
            while True:  # interrupted once the cell runs, however slow the machine
                said = await kc.get_iopub_msg(timeout=60)
                if said["msg_type"] == "stream" and "sleeping" in said["content"]["text"]:
                    break
            await km.interrupt_kernel()
            after = await kc._async_get_shell_msg(timeout=20)  # type: ignore[attr-defined]
            seen["interrupted"] = after["content"].get("ename")
    finally:
        kc.stop_channels()
    return seen


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_forked_kernel_is_a_kernel_of_its_own(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    async def two() -> list:
        kms = [ForkingKernelManager(kernel_name="python3") for _ in range(2)]
        seen = [await _run(kms[0], tmp_path / "a", interrupt=True),
                await _run(kms[1], tmp_path / "b", interrupt=False)]
        for km in kms:
            assert Path(km.format_kernel_cmd()[3]) == kernel_fork_manager.CLIENT
            # Unix sockets in the process's kernels folder, not TCP ports nor the cwd
            assert km.transport == "ipc"
            assert os.path.dirname(km.ip) == kernel_fork_manager.kernels_folder()
            assert any(p.startswith(os.path.basename(km.ip))
                       for p in os.listdir(kernel_fork_manager.kernels_folder()))
            await km.shutdown_kernel(now=False)
            assert not [p for p in os.listdir(kernel_fork_manager.kernels_folder())
                        if p.startswith(os.path.basename(km.ip))]
        return seen

    first, second = asyncio.run(two())
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]
    assert not os.listdir(tmp_path / "a") and not os.listdir(tmp_path / "b")
    words = [s["out"].split() for s in (first, second)]
    assert first["status"] == second["status"] == "ok"
    assert [w[0] for w in words] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert [w[1] for w in words] == ["mine", "mine"]
    assert words[0][2] == words[1][2] != str(os.getpid())  # both forked by the server
    assert [w[3] for w in words] == ["True", "True"]  # imported before the kernel started
    assert words[0][4] != words[1][4]  # NumPy's numbers differ from kernel to kernel
    # ipywidgets, imported by the server, registered with each kernel as when imported there
    assert [w[5] for w in words] == ["True", "True"]
    assert first["interrupted"] == "KeyboardInterrupt"


def test_kernels_keep_tcp_where_a_unix_socket_path_would_be_too_long(monkeypatch):
    monkeypatch.setattr(kernel_fork_manager, "_folder", "/tmp/" + "x" * 90)
    assert ForkingKernelManager(kernel_name="python3").transport == "tcp"
    monkeypatch.setattr(kernel_fork_manager, "_folder", "/tmp/labtools-kernels-abcdefgh")
    assert ForkingKernelManager(kernel_name="python3").transport == "ipc"


def test_a_killed_kernel_leaves_no_process(tmp_path):
    async def killed() -> int:
        km = ForkingKernelManager(kernel_name="python3")
        await km.start_kernel(cwd=str(tmp_path))
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        reply = await kc.execute_interactive("import os; print(os.getpid())", timeout=30,
                                             output_hook=lambda m: pids.extend(
                                                 [int(m["content"]["text"])]
                                                 if m["msg_type"] == "stream" else []))
        assert reply["content"]["status"] == "ok"
        kc.stop_channels()
        await km.shutdown_kernel(now=True)  # SIGKILL to what Jupyter started
        return pids[-1]

    pids: list = []
    pid = asyncio.run(killed())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


def test_kernels_start_as_before_when_switched_off_or_for_another_python(monkeypatch):
    km = ForkingKernelManager(kernel_name="python3")
    forked = km.format_kernel_cmd()
    assert forked[:4] == [sys.executable, "-S", "-B", str(kernel_fork_manager.CLIENT)]
    assert forked[5:7] == ["-m", "ipykernel_launcher"]
    monkeypatch.setenv("LABTOOLS_FORKED_KERNELS", "0")
    plain = km.format_kernel_cmd()
    assert plain[1:3] == ["-m", "ipykernel_launcher"] and str(kernel_fork_manager.CLIENT) not in plain


def test_the_client_without_a_server_becomes_the_kernel_itself(tmp_path):
    """No server at the socket: the client execs ``python ARGS`` (here: a tiny program)."""
    import subprocess

    program = tmp_path / "p.py"
    program.write_text("import sys; print('ran', sys.argv[1:]); sys.exit(3)\n")
    done = subprocess.run([sys.executable, "-S", str(kernel_fork_manager.CLIENT),
                           str(tmp_path / "none.sock"), str(program), "x"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (3, "ran ['x']\n")


@pytest.fixture(autouse=True)
def _no_signal_leftovers():
    before = signal.getsignal(signal.SIGINT)
    yield
    assert signal.getsignal(signal.SIGINT) == before


def test_the_server_imports_no_matplotlib_backend():
    """matplotlib's inline backend registers its hooks with the kernel it is imported in:
    it must be imported in the kernel itself (ipywidgets' registration is done again in
    each kernel: the test above)."""
    import subprocess

    from labtools.instructor.kernel_forks import PREIMPORTED

    code = ("import sys; from labtools.instructor.kernel_forks import _preimport; _preimport(); "
            "print(sorted(m for m in ('matplotlib_inline.backend_inline',) "
            "if m in sys.modules), all(m in sys.modules for m in sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, *PREIMPORTED], capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout == "[] True\n"


def test_a_stopped_server_removes_its_socket(tmp_path):
    """Stopped by a signal (``labtools autograde`` stops a run's process group with
    SIGTERM) or by its input closing, the server leaves nothing behind, not even what a
    killed kernel left beside its socket."""
    import subprocess

    for how in ("signal", "input"):
        folder = tmp_path / how
        folder.mkdir()
        path = folder / "forks.sock"
        proc = subprocess.Popen([sys.executable, "-m", "labtools.instructor.kernel_forks",
                                 str(path)], stdin=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.exists()
        (folder / "kernel-0123456789ab-1").touch()  # a killed kernel's socket
        if how == "signal":
            proc.terminate()
        else:
            proc.stdin.close()
        assert proc.wait(timeout=30) == (128 + signal.SIGTERM if how == "signal" else 0)
        assert not folder.exists()
