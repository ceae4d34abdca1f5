"""The Jupyter kernel in the lab VM (labtools.system.vm_kernel): the pure stages, its
errors, and one real kernel (marker ``vm``) that runs a lab with link delay in the VM,
answers an interrupt and takes its VM with it when killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from labtools import settings
from labtools.errors import InputError
from labtools.model import expect
from labtools.model.catalog import load_topology
from labtools.system import capabilities as caps
from labtools.system import vm, vm_kernel, vm_leftovers

CONNECTION = {"shell_port": 50001, "iopub_port": 50002, "stdin_port": 50003,
              "control_port": 50004, "hb_port": 50005, "ip": "127.0.0.1", "key": "k",
              "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": "python3"}


def test_connection_ports_in_protocol_order():
    assert vm_kernel.connection_ports(CONNECTION) == (50001, 50002, 50003, 50004, 50005)


@pytest.mark.parametrize("change, reason", [
    ({"transport": "ipc"}, "only tcp"),
    ({"hb_port": None}, "no valid hb_port"),
    ({"shell_port": 70000}, "no valid shell_port"),
    ({"control_port": "50004"}, "no valid control_port"),
])
def test_connection_ports_refuse_what_cannot_be_forwarded(change, reason):
    with pytest.raises(InputError, match=reason):
        vm_kernel.connection_ports({**CONNECTION, **change})


def test_guest_connection_binds_every_address_and_keeps_the_rest():
    guest = vm_kernel.guest_connection(CONNECTION)
    assert guest["ip"] == "0.0.0.0"
    assert {k: v for k, v in guest.items() if k != "ip"} == \
        {k: v for k, v in CONNECTION.items() if k != "ip"}
    assert CONNECTION["ip"] == "127.0.0.1"  # the host's file is left as it was


def test_kernelspec_interrupts_by_message_and_installs(tmp_path):
    spec = vm_kernel.kernelspec("/opt/venv/bin/python")
    assert spec["argv"] == ["/opt/venv/bin/python", "-m", "labtools.system.vm_kernel", "-f",
                            "{connection_file}"]
    assert spec["interrupt_mode"] == "message"  # a signal would stop the VM, not the cell
    folder = vm_kernel.install(tmp_path, "/opt/venv/bin/python", name="labvm")
    assert folder == tmp_path / "kernels" / "labvm"
    assert json.loads((folder / "kernel.json").read_text()) == spec
    with pytest.raises(InputError, match="kernel name"):
        vm_kernel.install(tmp_path, name="Lab VM")


def test_jupyter_finds_the_installed_kernelspec_before_the_native_one(tmp_path, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager

    vm_kernel.install(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    found = KernelSpecManager().get_kernel_spec("python3")
    assert found.display_name == vm_kernel.DISPLAY_NAME
    assert found.argv[1:3] == ["-m", "labtools.system.vm_kernel"]


@pytest.mark.parametrize("memory_max, cpu_max, expected", [
    ("max\n", "max 100000\n", (None, None)),
    ("2147483648\n", "100000 100000\n", ("1024M", 1)),
    ("1073741824\n", "150000 100000\n", ("512M", 1)),
    ("536870912\n", "400000 100000\n", ("512M", 2)),
    ("17179869184\n", "50000 100000\n", ("2048M", 1)),
])
def test_vm_size_fits_the_container(memory_max, cpu_max, expected):
    assert vm_kernel.vm_size(memory_max, cpu_max) == expected


def test_container_vm_size_reads_cgroup_files(tmp_path):
    assert vm_kernel.container_vm_size(tmp_path) == (None, None)  # no cgroup files
    (tmp_path / "memory.max").write_text("3221225472\n")
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    assert vm_kernel.container_vm_size(tmp_path) == ("1536M", 2)


def test_command_line_errors_are_one_line(tmp_path, capsys):
    assert vm_kernel.main([]) == 2
    assert "no connection file" in capsys.readouterr().err
    assert vm_kernel.main(["-f", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the kernel's connection file" in capsys.readouterr().err
    (tmp_path / "list.json").write_text("[1]")
    assert vm_kernel.main(["-f", str(tmp_path / "list.json")]) == 2
    assert "not a JSON object" in capsys.readouterr().err
    assert vm_kernel.main(["--install", str(tmp_path)]) == 0
    assert (tmp_path / "kernels" / "python3" / "kernel.json").is_file()


def test_host_side_forwards_the_five_ports_and_shares_the_vm_process_group(
        tmp_path, monkeypatch):
    calls: List[Dict[str, Any]] = []
    monkeypatch.setattr(vm, "run_in_vm", lambda command, **kw: calls.append(
        {"command": command, **kw}) or 0)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LABTOOLS_VM_MEMORY", "1G")
    (tmp_path / "kernel-1.json").write_text(json.dumps(CONNECTION))
    assert vm_kernel.main(["-f", str(tmp_path / "kernel-1.json")]) == 0
    (call,) = calls
    assert call["forward_ports"] == [(p, p) for p in range(50001, 50006)]
    assert call["new_session"] is False  # a killed kernel's group holds its VM
    assert call["rwdirs"] == [tmp_path] and call["memory"] is None  # the user's 1G stands
    assert call["command"][-3:] == ["--guest", "-f", str(tmp_path / "kernel-1.json")]
    assert ("HOME", str(tmp_path)) in call["env"]


# --- a real kernel in the lab VM --------------------------------------------------------

LAB = """\
import os
from labtools import settings
from labtools.judge import policy
from labtools.lab import probes
from labtools.lab.session import LabSession
lab = LabSession({spec!r}, results="results.json", case="path", calibrate=False,
                 durations=policy.durations(True))
lab.start()
ping = probes.ping(lab, "h1", "h2", count=5, interval_s=0.2)
lab.stop()
print("in-vm", settings.current().in_vm, "cwd", os.getcwd(), "min", ping.summary.min_ms)
"""
SPEC = "star,hosts=3,bw_mbps=10,delay_ms=5"


def _execute(client: Any, code: str, timeout_s: float) -> Dict[str, Any]:
    texts: List[str] = []

    def keep(msg: Dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            texts.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            texts.append(msg["content"]["ename"])

    reply = client.execute_interactive(code, timeout=timeout_s, output_hook=keep)
    return {"status": reply["content"]["status"], "text": "".join(texts)}


def _qemu_pids() -> List[str]:
    found = subprocess.run(["pgrep", "-f", "qemu-system.*virtme"], capture_output=True,
                           text=True)
    return found.stdout.split()


@pytest.mark.vm
@pytest.mark.skipif(settings.current().in_vm, reason="already inside the VM")
def test_real_kernel_in_the_vm_runs_a_delayed_lab_is_interrupted_and_killed(
        tmp_path, monkeypatch):
    if caps.vm_runner_missing():
        pytest.skip(f"VM runner not ready: {caps.vm_runner_missing()}")
    from jupyter_client.manager import KernelManager

    vm_kernel.install(tmp_path / "kernels")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "kernels"))
    work = tmp_path / "work"
    work.mkdir()
    before = set(_qemu_pids())
    folders_before = set(Path(tempfile.gettempdir()).glob(vm_leftovers.VM_MARK + "*"))
    manager = KernelManager(kernel_name="python3")
    assert manager.kernel_spec.display_name == vm_kernel.DISPLAY_NAME
    manager.start_kernel(cwd=str(work))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=300)
        ran = _execute(client, LAB.format(spec=SPEC), 600)
        assert ran["status"] == "ok", ran["text"]
        words = ran["text"].split()
        assert words[:4] == ["in-vm", "True", "cwd", str(work)], ran["text"]
        rtt_ms = expect.rtt_ms(load_topology(SPEC), "h1", "h2")  # the kit's calculator
        assert float(words[5]) >= rtt_ms  # the VM's netem delayed it
        assert (work / "results.json").stat().st_size > 0  # saved on the host's side
        threading.Timer(3, manager.interrupt_kernel).start()
        began = time.monotonic()
        stopped = _execute(client, "import time; time.sleep(120)", 180)
        assert stopped == {"status": "error", "text": "KeyboardInterrupt"}
        assert time.monotonic() - began < 60
        assert _execute(client, "print(6 * 7)", 60)["text"] == "42\n"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)  # SIGKILL to the kernel's process group
    deadline = time.monotonic() + 10
    while set(_qemu_pids()) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not set(_qemu_pids()) - before, "the killed kernel's VM is still running"
    # a SIGKILL leaves the runner's folder; the kit removes its own stale ones (as the next
    # VM of this user does when it starts), so nothing of this test is left
    left = set(Path(tempfile.gettempdir()).glob(vm_leftovers.VM_MARK + "*")) - folders_before
    assert {str(f) for f in left} <= set(vm_leftovers.stale_folders())
    vm_leftovers.remove_own_stale_folders()
    assert not [f for f in left if f.exists()]


def test_module_runs_as_the_kernelspec_runs_it():
    proc = subprocess.run([sys.executable, "-m", "labtools.system.vm_kernel"],
                          capture_output=True, text=True, env={**os.environ}, timeout=60)
    assert proc.returncode == 2 and "no connection file" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert Path(vm_kernel.__file__).name == "vm_kernel.py"
