"""Boot a whole system image under QEMU with systemd as its first process.

Unlike the VM runner (:mod:`labtools.system.vm`, which boots the host's own files for one
command), this boots a separate system from :mod:`tests.system_images`: its own disk,
kernel and initrd, systemd as init, user networking with ports forwarded from the host's
127.0.0.1 only (as Vagrant forwards them), and two 9p shares: the repository where
Vagrant's synced folder would be, and a control folder the host and the system talk
through. The system runs the control folder's stage script once it is up (see
:func:`tests.system_images.system_files`); the script ends by powering off or
rebooting, and QEMU exits either way.

Stages: :func:`qemu_args` is pure; :func:`boot` runs QEMU and waits.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from system_images import CONTROL_TAG, REPO_TAG

from labtools.errors import InputError, VMError
from labtools.system import capabilities as caps

#: kernel options: the disk is the root, the serial line is the console, no predictable
#: network names surprise (the .network file matches en* and eth*)
KERNEL_ARGS = ("root=/dev/vda", "rw", "console=ttyS0", "systemd.show_status=1",
               "net.ifnames=0")


@dataclass(frozen=True)
class BootSpec:
    """One boot of a system image.

    Attributes:
        image: the ext4 disk image (changed by the boot: boot a copy).
        kernel: the kernel image to boot (the system's own).
        initrd: the system's own initrd.
        repo: the host folder shared where Vagrant's synced folder would be.
        control: the host folder holding the stage script and what the system writes back.
        console_log: where the serial console goes.
        forwards: (host port, guest port) pairs, bound to the host's 127.0.0.1 only.
        memory_mb: guest memory in MiB.
        cpus: guest CPUs.
        kvm: use KVM (``False``: software emulation).
        kernel_args: extra kernel options (``labtools.stage=...`` for the stage script).
    """

    image: Path
    kernel: Path
    initrd: Path
    repo: Path
    control: Path
    console_log: Path
    forwards: Tuple[Tuple[int, int], ...] = ()
    memory_mb: int = 2048
    cpus: int = 2
    kvm: bool = False
    kernel_args: Tuple[str, ...] = ()


def validate(spec: BootSpec) -> None:
    """Refuse a spec QEMU would refuse later, with a one-line reason."""
    for path in (spec.image, spec.kernel, spec.initrd):
        if not path.is_file():
            raise InputError(f"{path} does not exist")
    for path in (spec.repo, spec.control):
        if not path.is_dir():
            raise InputError(f"{path} is not a folder")
    if spec.memory_mb < 512 or spec.cpus < 1:
        raise InputError("a system needs at least 512 MiB and one CPU")
    for host_port, guest_port in spec.forwards:
        if not (1 <= host_port <= 65535 and 1 <= guest_port <= 65535):
            raise InputError(f"port pair {host_port}->{guest_port} is outside 1..65535")


def qemu_args(spec: BootSpec, qemu: str = "qemu-system-x86_64") -> List[str]:
    """The QEMU argument list for ``spec``."""
    fwd = "".join(f",hostfwd=tcp:127.0.0.1:{h}-:{g}" for h, g in spec.forwards)
    share = "local,security_model=none,multidevs=remap"
    return [
        qemu, "-name", "labtools-system", "-machine", "q35",
        "-accel", "kvm" if spec.kvm else "tcg", "-cpu", "max" if not spec.kvm else "host",
        "-m", str(spec.memory_mb), "-smp", str(spec.cpus),
        "-kernel", str(spec.kernel), "-initrd", str(spec.initrd),
        "-append", " ".join((*KERNEL_ARGS, *spec.kernel_args)),
        "-drive", f"file={spec.image},if=virtio,format=raw,cache=unsafe",
        "-netdev", f"user,id=net0{fwd}", "-device", "virtio-net-pci,netdev=net0",
        "-fsdev", f"{share},id=repo,path={spec.repo}",
        "-device", f"virtio-9p-pci,fsdev=repo,mount_tag={REPO_TAG}",
        "-fsdev", f"{share},id=ctl,path={spec.control}",
        "-device", f"virtio-9p-pci,fsdev=ctl,mount_tag={CONTROL_TAG}",
        "-display", "none", "-vga", "none", "-serial", f"file:{spec.console_log}",
        "-monitor", "none", "-no-reboot",
    ]


def boot(spec: BootSpec, timeout_s: float,
         while_running: Optional[Callable[[Callable[[], bool]], None]] = None) -> float:
    """Boot ``spec`` and wait until the system powers off or reboots; returns seconds.

    ``while_running`` is called once right after QEMU starts (in this thread) with a
    function that says whether QEMU still runs: the host's side of a stage (it may wait for
    the system and talk to it through the control folder).
    Raises :class:`VMError` when QEMU is missing, fails, or the time-out expires (the VM
    is killed: nothing is left running).
    """
    validate(spec)
    qemu = caps.find_tool("qemu")
    if qemu is None:
        raise VMError("QEMU is missing (scripts/setup.sh installs it)")
    start = time.monotonic()
    proc = subprocess.Popen(qemu_args(spec, qemu), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        if while_running is not None:
            while_running(lambda: proc.poll() is None)
        remaining = max(1.0, timeout_s - (time.monotonic() - start))
        out, _ = proc.communicate(timeout=remaining)
    except subprocess.TimeoutExpired as err:
        raise VMError(f"the system did not power off within {timeout_s:.0f} s "
                      f"(console: {spec.console_log})") from err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        said = out.decode(errors="replace").strip().splitlines()[-1:] if out else []
        raise VMError(f"QEMU exited with status {proc.returncode}: {' '.join(said)}")
    return time.monotonic() - start
