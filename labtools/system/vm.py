"""The VM runner: run one command in a throwaway VM booted from a stock distribution kernel.

Hosts whose kernel cannot emulate delay (no ``sch_netem``) still run real Mininet networks
this way. The VM is started with virtme-ng (``vng``): it boots ``/boot/vmlinuz-<release>``
under QEMU with the host's root file system shared read-only, so every installed tool and
the kit's venv are there. Only the ``rwdirs`` (by default the kit's project folder and the
current directory) are writable, so results and notebooks land on the host; everything else
written in the guest is thrown away.

Stages: :func:`build_vng_args` and :func:`guest_script` are pure (a :class:`VMSpec` in,
text out); :func:`run_vng` runs and streams; :func:`run_in_vm` ties them together and
returns the guest command's exit status, read back from a status file in a shared folder.

Ports are forwarded only from ``127.0.0.1`` on the host (QEMU user networking with
``restrict=on``: the guest reaches nothing outside the VM).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

from labtools import settings
from labtools.errors import InputError, VMError
from labtools.paths import checkout_root
from labtools.system import vm_cache, vm_leftovers
from labtools.system.signals import guard_signals
from labtools.system.toolenv import tools_env, venv_bin_dir
from labtools.system.vm_leftovers import VM_MARK, VM_OWNER_FILE

#: kernel modules the guest loads before the command (missing ones only print a note)
DEFAULT_MODULES: Tuple[str, ...] = ("sch_netem", "sch_htb", "openvswitch")
#: MAC address and IPv4 address of the guest's NIC (only present when ports are forwarded)
GUEST_MAC = "52:54:00:4c:41:42"
GUEST_ADDR = "10.0.2.15"
GUEST_PREFIX_LEN = 24
#: the guest's PATH after the venv's scripts
GUEST_PATH_TAIL = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: host environment variables copied into the guest (besides every ``LABTOOLS_*``)
PASSED_ENV = ("LANG", "LC_ALL", "TZ", "PYTHONUNBUFFERED")
#: exit status the guest script uses when it cannot enter the working directory
NO_CWD_STATUS = 125
STATUS_FILE = "status"
#: ``LABTOOLS_VM_IDLE_POLL=1`` (software emulation only): one guest CPU that never halts.
#: A halted emulated CPU wakes late for each timer, and every netem delay is a timer; one
#: awake CPU cut a 60 ms path's extra RTT from 2.2-3.7 ms to 1.1-1.4 ms, but one CPU loses
#: UDP datagrams from 20 Mbit/s on (measured side by side; docs/running.md, "Where the
#: kernel cannot emulate"), so it is not the default. It keeps one host core busy while it runs.
IDLE_POLL_CPUS = 1
IDLE_POLL_KERNEL_ARGS = ("idle=poll",)
#: drivers the guest never uses, which udev would load at boot for QEMU's emulated hardware
#: (nested KVM, the watchdog, the SATA and CD-ROM controllers, input, CPU-specific crypto):
#: under software emulation their loading kept the boot waiting for udev 6.1 s, without
#: them 2.7 s (the command started 3.4 s sooner; measured with dmesg in the guest)
UNUSED_GUEST_MODULES = (
    "kvm", "kvm_amd", "kvm_intel", "irqbypass", "ccp", "iTCO_wdt", "iTCO_vendor_support",
    "intel_pmc_bxt", "i6300esb", "watchdog", "ahci", "libahci", "libata", "scsi_mod", "sr_mod",
    "cdrom", "sg", "psmouse", "serio_raw", "pcspkr", "i2c_i801", "i2c_smbus", "lpc_ich",
    "evdev", "button", "qemu_fw_cfg", "crct10dif_pclmul", "crc32_pclmul", "crc32c_intel",
    "ghash_clmulni_intel", "sha512_ssse3", "sha256_ssse3", "sha1_ssse3", "aesni_intel",
    "crypto_simd", "cryptd")
SCRIPT_FILE = "guest.sh"


@dataclass(frozen=True)
class VMSpec:
    """Everything one VM run needs. Paths are host paths (the guest sees the same paths).

    Attributes:
        command: the command and its arguments, run in ``cwd`` inside the guest.
        kernel: the kernel image to boot.
        vng: path of the ``vng`` executable.
        cwd: working directory of the command.
        rwdirs: host folders the guest may write (everything else is read-only or thrown away).
        state_dir: a host folder shared writable, holding the guest script and status file.
        memory: guest memory in QEMU's notation (``2G``, ``1536M``).
        cpus: number of guest CPUs.
        kernel_args: extra guest kernel command-line options (``idle=poll``).
        kvm: use KVM; ``False`` means software emulation (slower boot, always works).
        forward_ports: (host port, guest port) pairs; the host side binds 127.0.0.1 only.
        modules: kernel modules to load before the command.
        env: (name, value) pairs exported in the guest.
        path_dirs: folders put in front of the guest's PATH (the venv's scripts).
        cached: folders the guest reads through cached shares (:mod:`vm_cache`).
    """

    command: Tuple[str, ...]
    kernel: Path
    vng: str
    cwd: Path
    rwdirs: Tuple[Path, ...]
    state_dir: Path
    memory: str = "2G"
    cpus: int = 2
    kernel_args: Tuple[str, ...] = ()
    kvm: bool = False
    forward_ports: Tuple[Tuple[int, int], ...] = ()
    modules: Tuple[str, ...] = DEFAULT_MODULES
    env: Tuple[Tuple[str, str], ...] = ()
    path_dirs: Tuple[str, ...] = ()
    cached: Tuple[Path, ...] = ()


def project_root() -> Optional[Path]:
    """The kit's source folder when it is installed from a checkout (editable), else None."""
    return checkout_root()


def default_rwdirs(cwd: Path) -> Tuple[Path, ...]:
    """The kit's project folder plus ``cwd`` when it lies outside it (never ``/``)."""
    dirs: List[Path] = []
    root = project_root()
    if root is not None:
        dirs.append(root)
    if cwd != Path("/") and not any(cwd == d or d in cwd.parents for d in dirs):
        dirs.append(cwd)
    return tuple(dirs)


def memory_mib(memory: str) -> int:
    """MiB of a guest memory size in QEMU's notation as the kit takes it (``2G``, ``1536M``).

    Raises:
        InputError: another notation (``-5``, ``0G``, ``2GB``).
    """
    match = re.fullmatch(r"([1-9]\d*)([MG])", memory)
    if match is None:
        raise InputError(f"memory {memory!r} is not like 2G or 1536M")
    return int(match[1]) * (1024 if match[2] == "G" else 1)


def validate_spec(spec: VMSpec) -> None:
    """Refuse bad options with :class:`InputError` before anything starts."""
    if not spec.command:
        raise InputError("no command given to run in the VM (labtools vm -- CMD)")
    memory_mib(spec.memory)
    if spec.cpus < 1:
        raise InputError(f"cpus must be at least 1, not {spec.cpus}")
    for arg in spec.kernel_args:
        if not re.fullmatch(r"[A-Za-z0-9_.,=-]+", arg):
            raise InputError(f"kernel option {arg!r} is not like idle=poll")
    for host_port, guest_port in spec.forward_ports:
        for port in (host_port, guest_port):
            if not 1 <= port <= 65535:
                raise InputError(f"port {port} is outside 1..65535")
    for name, _ in spec.env:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise InputError(f"{name!r} is not a valid environment variable name")


def qemu_net_opts(forward_ports: Sequence[Tuple[int, int]]) -> str:
    """QEMU options for a NIC whose forwarded ports listen on the host's 127.0.0.1 only."""
    fwd = ",".join(f"hostfwd=tcp:127.0.0.1:{h}-{GUEST_ADDR}:{g}" for h, g in forward_ports)
    return (f"-device virtio-net-pci,netdev=labnet,mac={GUEST_MAC} "
            f"-netdev user,id=labnet,restrict=on,{fwd}")


def guest_script(spec: VMSpec) -> str:
    """The shell script the guest runs: environment, modules, network, command, status."""
    q = shlex.quote
    status = q(str(spec.state_dir / STATUS_FILE))
    path = ":".join([*spec.path_dirs, GUEST_PATH_TAIL])
    lines = [
        "# run by labtools vm inside the guest",
        "# the kit's Python through cached shares: a process reads what an earlier one read",
        *vm_cache.guest_lines(_shares(spec)),
        f"export {settings.IN_VM}=1",
        f"export {settings.VM_MODE}={'kvm' if spec.kvm else 'tcg'}",
        "export PYTHONUNBUFFERED=1  # stream output as it comes",
        f"export PATH={q(path)}",
        *(f"export {name}={q(value)}" for name, value in spec.env),
        '[ -w "$HOME" ] || { export HOME=/tmp/labtools-home; mkdir -p "$HOME"; }',
        "# a /tmp shared from the host (9p) cannot hold the unlinked files iperf3 maps",
        '[ "$(stat -f -c %T /tmp)" = tmpfs ] || '
        '{ export TMPDIR=/run/labtools-tmp; mkdir -p "$TMPDIR"; }',
        f"for m in {' '.join(q(m) for m in spec.modules)}; do",
        '  modprobe -q "$m" || echo "labtools vm: note: kernel module $m not loaded" >&2',
        "done",
        "ip link set lo up",
    ]
    if spec.forward_ports:
        lines += [
            "for d in /sys/class/net/*; do",
            f'  [ "$(cat "$d/address")" = {GUEST_MAC} ] && dev=$(basename "$d")',
            "done",
            f'ip link set "$dev" up && ip addr add {GUEST_ADDR}/{GUEST_PREFIX_LEN} dev "$dev"',
            f"export LABTOOLS_VM_ADDR={GUEST_ADDR}",
        ]
    lines += [
        "echo \"labtools vm: guest up after $(cut -d' ' -f1 /proc/uptime) s\" >&2",
        f"echo {q('labtools vm: running: ' + shlex.join(spec.command))} >&2",
        f"cd {q(str(spec.cwd))} || {{ echo {NO_CWD_STATUS} > {status}; exit {NO_CWD_STATUS}; }}",
        shlex.join(spec.command),
        "rc=$?",
        f"echo $rc > {status}",
        "exit $rc",
    ]
    return "\n".join(lines) + "\n"


def _shares(spec: VMSpec) -> Tuple[vm_cache.CachedShare, ...]:
    return vm_cache.cached_shares(spec.cached, (*spec.rwdirs, spec.state_dir))


def build_vng_args(spec: VMSpec) -> List[str]:
    """The ``vng`` argument list that boots the VM and runs the guest script.

    ``--force-9p``: the guest sees the host's files through 9p. Without it virtme-ng first
    tries virtiofs; QEMU's own virtiofsd (Debian 12, QEMU 7.2) refuses virtme-ng's options
    and each of the three shares waited about 3 s before the fallback to 9p (9.4 s of every
    boot, measured with strace)."""
    args = [spec.vng, "--run", str(spec.kernel), "--memory", spec.memory,
            "--cpus", str(spec.cpus), "--force-9p"]
    if not spec.kvm:
        args.append("--disable-kvm")
    for d in (*spec.rwdirs, spec.state_dir):
        args += ["--rwdir", str(d)]
    args += ["--append", "module_blacklist=" + ",".join(UNUSED_GUEST_MODULES)]
    for arg in spec.kernel_args:
        args += ["--append", arg]
    args += ["--cwd", str(spec.cwd)]
    shares = _shares(spec)
    qemu = [qemu_net_opts(spec.forward_ports)] if spec.forward_ports else []
    qemu += [vm_cache.qemu_opts(shares)] if shares else []
    if qemu:
        args.append(f"--qemu-opts={' '.join(qemu)}")
    args += ["--exec", f"sh {shlex.quote(str(spec.state_dir / SCRIPT_FILE))}"]
    return args


def _pump(source: IO[bytes], target: IO[str]) -> None:
    """Copy a child's output to our stream as it arrives."""
    out = getattr(target, "buffer", None)
    for chunk in iter(lambda: os.read(source.fileno(), 4096), b""):  # what has arrived
        if out is not None:
            out.write(chunk)
            out.flush()
        else:
            target.write(chunk.decode(errors="replace"))
            target.flush()


def _stop(proc: "subprocess.Popen[bytes]", group: bool = True) -> None:
    """Terminate the VM (its whole process group when it has its own), forcefully after 5 s."""
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run_vng(args: Sequence[str], env: Dict[str, str], timeout_s: Optional[float],
            new_session: bool = True) -> int:
    """Run ``vng``, streaming its output to ours; returns its exit status.

    Output goes through pipes: QEMU truncates a regular file given as its stdout.
    ``new_session``: the VM gets a session of its own (a terminal's Ctrl-C reaches only this
    process, which stops the VM); ``False`` keeps it in our process group, so that whoever
    kills the group (a Jupyter kernel's manager) kills the VM too.
    Raises :class:`VMError` when ``vng`` cannot start or the time-out expires.
    """
    try:
        proc = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, start_new_session=new_session)
    except OSError as err:
        raise VMError(f"cannot start {args[0]}: {err.strerror}") from err
    pumps = [threading.Thread(target=_pump, args=(src, dst), daemon=True)
             for src, dst in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr))]
    for t in pumps:
        t.start()
    try:
        with guard_signals():  # SIGTERM, SIGHUP: stop the VM (its own session) as Ctrl-C does
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _stop(proc, new_session)
                raise VMError(f"the VM run did not finish within {timeout_s:.0f} s and was "
                              "stopped") from None
            except KeyboardInterrupt:
                _stop(proc, new_session)
                raise
    finally:
        for t in pumps:
            t.join(timeout=5)
    return proc.returncode


def _kvm_default() -> bool:
    """``$LABTOOLS_VM_KVM`` (1 or 0) when set, else the (cached) KVM probe's verdict."""
    from labtools.system import capabilities as caps

    choice = settings.current().vm_kvm
    if choice is not None:
        return choice
    return caps.kvm_usable(progress=sys.stderr)[0]


def make_spec(command: Sequence[str], state_dir: Path, *, cwd: Optional[Path] = None,
              memory: Optional[str] = None, cpus: Optional[int] = None,
              kvm: Optional[bool] = None, rwdirs: Sequence[Path] = (),
              forward_ports: Sequence[Tuple[int, int]] = (),
              env: Sequence[Tuple[str, str]] = ()) -> VMSpec:
    """A :class:`VMSpec` with this machine's defaults filled in.

    Defaults: memory ``$LABTOOLS_VM_MEMORY`` or 2G; KVM per ``$LABTOOLS_VM_KVM`` (1/0) or
    when the (cached) probe says it works; cpus ``$LABTOOLS_VM_CPUS`` or up to 2. Under
    software emulation ``$LABTOOLS_VM_IDLE_POLL=1`` keeps the guest CPU awake
    (``idle=poll``, one CPU unless ``$LABTOOLS_VM_CPUS`` says otherwise).
    Raises :class:`VMError` with a fix when the VM runner is not ready.
    """
    from labtools.system import capabilities as caps

    missing = caps.vm_runner_missing()
    if missing:
        what, fix = missing[0]
        raise VMError(f"the VM runner needs {what}; fix: {fix}")
    kernel, vng = caps.find_vm_kernel(), caps.find_tool("vng")
    if kernel is None or vng is None:  # pragma: no cover - vm_runner_missing covers it
        raise VMError("the VM runner is not ready; run labtools doctor")
    here = (cwd or Path.cwd()).resolve()
    if kvm is None:
        kvm = _kvm_default()
    chosen = settings.current()
    idle_poll = not kvm and chosen.vm_idle_poll
    n_cpus = cpus or chosen.vm_cpus or (
        IDLE_POLL_CPUS if idle_poll else min(2, os.cpu_count() or 1))
    passed = settings.passed_on(also=PASSED_ENV)
    spec = VMSpec(
        command=tuple(command), kernel=kernel, vng=vng, cwd=here,
        rwdirs=tuple(dict.fromkeys([*default_rwdirs(here), *(Path(d).resolve() for d in rwdirs)])),
        state_dir=state_dir, memory=memory or chosen.vm_memory,
        cpus=n_cpus, kernel_args=IDLE_POLL_KERNEL_ARGS if idle_poll else (),
        kvm=kvm, forward_ports=tuple(forward_ports),
        env=tuple({**passed, **dict(env)}.items()), path_dirs=(str(venv_bin_dir()),),
        cached=vm_cache.python_dirs(),
    )
    validate_spec(spec)
    return spec


def run_in_vm(command: Sequence[str], *, timeout_s: Optional[float] = None,
              new_session: bool = True, **options: Any) -> int:
    """Run ``command`` in a throwaway VM; returns the command's own exit status.

    ``options`` are those of :func:`make_spec` (``cwd``, ``memory``, ``cpus``, ``kvm``,
    ``rwdirs``, ``forward_ports``, ``env``); ``new_session`` as in :func:`run_vng`.
    Progress goes to stderr. Raises
    :class:`VMError` when the VM cannot boot, times out (``timeout_s`` seconds, boot
    included) or ends before the command finished.
    """

    vm_leftovers.remove_own_stale_folders()  # of this user's runners killed earlier
    with tempfile.TemporaryDirectory(prefix=VM_MARK) as tmp:
        state_dir = Path(tmp)
        # who owns this VM: `labtools clean` stops a VM whose owner is gone
        (state_dir / VM_OWNER_FILE).write_text(f"{os.getpid()}\n")
        spec = make_spec(command, state_dir, **options)
        (state_dir / SCRIPT_FILE).write_text(guest_script(spec))
        mode = "KVM" if spec.kvm else "software emulation, about 13 s"
        mode += f"; {spec.cpus} CPU{'s' if spec.cpus > 1 else ''}"
        if spec.kernel_args:
            mode += f", {' '.join(spec.kernel_args)}"
        release = spec.kernel.name[len("vmlinuz-"):]
        print(f"labtools vm: booting Linux {release} ({mode})...", file=sys.stderr, flush=True)
        start = time.monotonic()
        vng_status = run_vng(build_vng_args(spec), tools_env(), timeout_s, new_session)
        took = time.monotonic() - start
        status_path = state_dir / STATUS_FILE
        if not status_path.is_file():
            raise VMError(f"the VM stopped before the command finished (vng exit status "
                          f"{vng_status} after {took:.0f} s); see the messages above")
        status = int(status_path.read_text().strip() or "1")
    print(f"labtools vm: done in {took:.0f} s, exit status {status}", file=sys.stderr, flush=True)
    return status
