"""A Jupyter kernel that runs inside the lab VM, for a JupyterLab that runs outside it.

Where the machine's kernel has no ``sch_netem`` (a course server's container, a laptop's
Docker), a lab with link delay cannot run natively. The lab VM can run it, but JupyterLab
inside the VM under software emulation takes minutes to answer. Here only the notebook's
kernel goes into the VM: JupyterLab (or a hub's single-user server) stays where it is and
answers at once; the kernel answers once the VM is up (about a minute under software
emulation), and everything the notebook runs (the lab's network, ping, iperf) runs in the
VM's stock kernel with netem.

How it works: the kernelspec (:func:`kernelspec`) starts ``python -m
labtools.system.vm_kernel -f CONNECTION_FILE``. On the host, that forwards the five ports of
the connection file from 127.0.0.1 into the VM (QEMU user networking, as ``labtools vm
--forward``) and boots the VM with the home folder writable; in the guest, the same module
(``--guest``) binds the kernel to the VM's address and starts ipykernel. Interrupts go as
messages (``interrupt_mode: message``: a signal would stop the VM, not the cell); the VM
runs in the kernel's process group, so a kernel that is killed takes its VM with it.

Stages: :func:`connection_ports`, :func:`guest_connection` and :func:`kernelspec` are pure;
:func:`run_host` and :func:`run_guest` run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labtools import settings
from labtools.errors import InputError, LabtoolsError

#: the kernelspec's name: it stands in for the usual ``python3`` where it is installed
#: (every notebook's kernel goes to the VM); ``--name labvm`` puts it beside ``python3``
KERNEL_NAME = "python3"
DISPLAY_NAME = "Python 3 (lab VM)"
#: the connection file's five ports (Jupyter's messaging protocol)
PORT_NAMES: Tuple[str, ...] = ("shell_port", "iopub_port", "stdin_port", "control_port",
                               "hb_port")
#: the address the kernel binds in the guest (QEMU forwards to the guest's own address)
GUEST_BIND = "0.0.0.0"
#: where a container's limits are (cgroup v2)
CGROUP = Path("/sys/fs/cgroup")
#: the VM's memory in a container with a memory limit: this share of the limit, within
#: the bounds below (the server and QEMU itself need the rest)
VM_MEMORY_SHARE = 0.5
VM_MEMORY_MIN_MB = 512
VM_MEMORY_MAX_MB = 2048
VM_CPUS_MAX = 2
#: environment variables the kernel in the guest needs from the server's
KERNEL_ENV: Tuple[str, ...] = ("HOME", "MPLCONFIGDIR", "JPY_SESSION_NAME", "JUPYTERHUB_USER",
                               "PYTHONPATH")


def connection_ports(connection: Dict[str, Any]) -> Tuple[int, ...]:
    """The five TCP ports of a kernel's connection file, in :data:`PORT_NAMES` order.

    Raises :class:`InputError` when the file is not a TCP connection file with all five."""
    if connection.get("transport", "tcp") != "tcp":
        raise InputError(f"kernel transport {connection.get('transport')!r}: only tcp "
                         "reaches into the lab VM")
    ports: List[int] = []
    for name in PORT_NAMES:
        port = connection.get(name)
        if not isinstance(port, int) or not 1 <= port <= 65535:
            raise InputError(f"the kernel's connection file has no valid {name}: {port!r}")
        ports.append(port)
    return tuple(ports)


def guest_connection(connection: Dict[str, Any]) -> Dict[str, Any]:
    """The connection file as the guest's kernel uses it: the same ports and key, bound
    to every address of the guest (the forwarded ports arrive on the guest's NIC)."""
    return {**connection, "ip": GUEST_BIND}


def vm_size(memory_max: str, cpu_max: str) -> Tuple[Optional[str], Optional[int]]:
    """The VM's memory (QEMU's notation) and CPUs that fit a container whose cgroup files
    say ``memory_max`` (bytes or ``max``) and ``cpu_max`` (``QUOTA PERIOD`` or ``max
    PERIOD``); None where the container sets no limit."""
    memory: Optional[str] = None
    if memory_max.strip().isdigit():
        limit_mb = int(memory_max) // 2**20
        memory = f"{max(VM_MEMORY_MIN_MB, min(VM_MEMORY_MAX_MB, int(limit_mb * VM_MEMORY_SHARE)))}M"
    cpus: Optional[int] = None
    quota, _, period = cpu_max.strip().partition(" ")
    if quota.isdigit() and period.isdigit() and int(period) > 0:
        cpus = max(1, min(VM_CPUS_MAX, int(quota) // int(period)))
    return memory, cpus


def container_vm_size(cgroup: Path = CGROUP) -> Tuple[Optional[str], Optional[int]]:
    """:func:`vm_size` for this process's cgroup (None, None where it cannot be read)."""
    try:
        return vm_size((cgroup / "memory.max").read_text(), (cgroup / "cpu.max").read_text())
    except OSError:
        return None, None


def kernelspec(python: str) -> Dict[str, Any]:
    """The ``kernel.json`` of the VM kernel for the interpreter ``python`` (a path)."""
    return {
        "argv": [python, "-m", "labtools.system.vm_kernel", "-f", "{connection_file}"],
        "display_name": DISPLAY_NAME,
        "language": "python",
        "interrupt_mode": "message",
        "metadata": {"debugger": False},
    }


def install(data_dir: Path, python: Optional[str] = None, name: str = KERNEL_NAME) -> Path:
    """Write the kernelspec ``name`` under ``data_dir/kernels/`` (a folder for
    ``JUPYTER_PATH``); returns the kernelspec's folder."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        raise InputError(f"kernel name {name!r}: lower-case letters, digits, . _ - only")
    folder = data_dir / "kernels" / name
    folder.mkdir(parents=True, exist_ok=True)
    spec = kernelspec(python or sys.executable)
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
    return folder


def read_connection(path: Path) -> Dict[str, Any]:
    """The connection file's JSON; :class:`InputError` when it is missing or not JSON."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read the kernel's connection file {path}: {err}") from err
    if not isinstance(found, dict):
        raise InputError(f"the kernel's connection file {path} is not a JSON object")
    return found


def _writable_home() -> List[Path]:
    home = Path.home()
    return [home] if home != Path("/") and os.access(home, os.W_OK) else []


def run_host(connection_file: Path) -> int:
    """Boot the lab VM with the kernel's ports forwarded and run the kernel in it; the
    kernel's exit status."""
    from labtools.system import vm

    connection_file = connection_file.resolve()
    ports = connection_ports(read_connection(connection_file))
    env = [(k, v) for k, v in settings.passed_on(also=KERNEL_ENV).items() if k in KERNEL_ENV]
    command = [sys.executable, "-m", "labtools.system.vm_kernel", "--guest",
               "-f", str(connection_file)]
    memory, cpus = container_vm_size()
    chosen = settings.current()
    if chosen.vm_memory_chosen:  # the user's choice stands
        memory = None
    if chosen.vm_cpus is not None:
        cpus = None
    return vm.run_in_vm(command, forward_ports=[(p, p) for p in ports], memory=memory,
                        cpus=cpus, rwdirs=_writable_home(), env=env, new_session=False)


def run_guest(connection_file: Path) -> None:
    """In the guest: ipykernel with the connection file bound to the guest's addresses
    (replaces this process)."""
    connection = guest_connection(read_connection(connection_file))
    connection_ports(connection)
    folder = Path(tempfile.mkdtemp(prefix="labtools-kernel-"))
    guest_file = folder / connection_file.name
    guest_file.write_text(json.dumps(connection))
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f",
                              str(guest_file)])


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m labtools.system.vm_kernel [--guest] -f CONNECTION_FILE``, or
    ``--install DATA_DIR`` to write the kernelspec."""
    parser = argparse.ArgumentParser(prog="python -m labtools.system.vm_kernel",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-f", dest="connection_file", type=Path)
    parser.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--install", type=Path, metavar="DATA_DIR",
                        help="write the kernelspec under DATA_DIR/kernels/ and stop")
    parser.add_argument("--name", default=KERNEL_NAME, help="the kernelspec's name (--install)")
    args = parser.parse_args(argv)
    try:
        if args.install is not None:
            print(install(args.install, name=args.name))
            return 0
        if args.connection_file is None:
            raise InputError("no connection file (-f CONNECTION_FILE)")
        if args.guest:
            run_guest(args.connection_file)
        return run_host(args.connection_file)
    except LabtoolsError as err:
        print(f"labtools vm kernel: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover - the kernelspec's command
    sys.exit(main())
