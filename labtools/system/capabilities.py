"""What this machine can do for the lab: tools, kernel features, KVM, the VM runner (whether
this user can give a lab a sandbox: :mod:`labtools.system.userns`).

Every check is cheap except the KVM probe (a tiny VM boot with a short time-out), whose
result is cached in ``<cache dir>/kvm-probe.json`` (see :func:`cache_dir`) so that
``labtools doctor`` stays fast after the first run.

Each external command goes through three stages: an argument builder (pure), a runner and a
parser (pure: text in, value out).

Public entry points:

* :func:`tool_info` -- path and version of a tool (``iperf``, ``iperf3``, ``ping``...).
* :func:`kernel_has_netem`, :func:`kernel_has_module` -- kernel features, tried for real.
* :func:`netem_module_state` -- is ``sch_netem`` loaded, built in, loadable or missing?
* :func:`kvm_usable` -- does a KVM boot actually work (cached probe)?
* :func:`find_vm_kernel`, :func:`vm_runner_missing` -- is the VM runner ready?
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, TextIO, Tuple

from labtools import settings
from labtools.errors import ParseError
from labtools.system.toolenv import tools_env

#: tool -> arguments after the executable that print its version
VERSION_ARGS: Dict[str, Tuple[str, ...]] = {
    "iperf": ("-v",),
    "iperf3": ("--version",),
    "ping": ("-V",),
    "brctl": ("--version",),
    "ovs-vsctl": ("--version",),
    "mn": ("--version",),
    "vng": ("--version",),
    "qemu": ("--version",),
    "tc": ("-V",),
}

#: tool -> regular expression whose first group is the version (multi-line mode)
VERSION_PATTERNS: Dict[str, str] = {
    "iperf": r"^iperf version (\S+)",
    "iperf3": r"^iperf (\d\S*)",
    "ping": r"iputils[- ](\S+)",
    "brctl": r"^bridge-utils,? (\S+)",
    "ovs-vsctl": r"\(Open vSwitch\) (\S+)",
    "mn": r"^(\d+\.\d+\S*)\s*$",
    "vng": r"^virtme-ng (\S+)",
    "qemu": r"^QEMU emulator version (\S+)",
    "tc": r"iproute2-([\w.]+)",
}

#: machine architecture -> QEMU binary for a guest of the same architecture
QEMU_BINARIES: Dict[str, str] = {
    "x86_64": "qemu-system-x86_64",
    "aarch64": "qemu-system-aarch64",
}

#: host paths that a failing check can suggest installing (Debian package names)
DEBIAN_KERNEL_PACKAGES: Dict[str, str] = {
    "x86_64": "linux-image-amd64",
    "aarch64": "linux-image-arm64",
}

KVM_PROBE_TIMEOUT_S = 20.0
#: how long a kernel probe (a netem qdisc, loading a module) may take, in seconds: in the
#: lab VM under software emulation, with two more VMs on the machine (a course hub's
#: students at once), the first netem qdisc took over 5 s; a probe that ends sooner is
#: not slowed down by a longer limit
KERNEL_PROBE_TIMEOUT_S = 30.0
KVM_CACHE_FILE = "kvm-probe.json"


@dataclass(frozen=True)
class ToolInfo:
    """Where a tool is and which version it reports (``None`` when unknown or absent)."""

    name: str
    path: Optional[str]
    version: Optional[str]


def is_root() -> bool:
    """True when running with user id 0 (Open vSwitch labs and loading modules need it)."""
    return os.geteuid() == 0


def qemu_binary() -> str:
    """Name of the QEMU system emulator for this machine's architecture."""
    return QEMU_BINARIES.get(platform.machine(), f"qemu-system-{platform.machine()}")


def find_tool(name: str) -> Optional[str]:
    """Absolute path of a tool (``qemu`` means :func:`qemu_binary`), or ``None``."""
    exe = qemu_binary() if name == "qemu" else name
    return shutil.which(exe, path=tools_env()["PATH"])


def version_args(name: str, path: str) -> List[str]:
    """Argument list that makes tool ``name`` (found at ``path``) print its version."""
    return [path, *VERSION_ARGS[name]]


def parse_version(name: str, text: str) -> str:
    """The version string in a tool's version output; :class:`ParseError` if none."""
    match = re.search(VERSION_PATTERNS[name], text, re.MULTILINE)
    if match is None:
        raise ParseError(name, "no version number in its --version output")
    return match.group(1).rstrip(",")


def tool_info(name: str, timeout_s: float = 20.0) -> ToolInfo:
    """Find tool ``name`` and ask its version (some tools exit 1 after printing it)."""
    path = find_tool(name)
    if path is None:
        return ToolInfo(name, None, None)
    try:
        proc = subprocess.run(version_args(name, path), capture_output=True, text=True,
                              timeout=timeout_s, env=tools_env(), check=False)
        return ToolInfo(name, path, parse_version(name, proc.stdout + proc.stderr))
    except (OSError, subprocess.TimeoutExpired, ParseError):
        return ToolInfo(name, path, None)


def mininet_available() -> Tuple[bool, str]:
    """Is Mininet's Python API importable here and its ``mnexec`` helper installed?

    Only looks the package up (no import: importing Mininet is left to labtools.lab.network).
    """
    spec = importlib.util.find_spec("mininet")
    mnexec = find_tool("mnexec")
    if spec is None or spec.origin is None:
        return False, f"the Python package 'mininet' is not visible to {sys.executable}"
    if mnexec is None:
        return False, "the 'mnexec' helper is missing"
    return True, f"Python package in {Path(spec.origin).parent}"


def netem_probe_args(user_namespace: bool = False) -> List[str]:
    """Try a netem qdisc in a throwaway network namespace that vanishes with the process
    (with ``user_namespace``, in a user namespace of its own too: what a user without root
    can try, as a lab's sandbox would)."""
    unshare = ["unshare", *(["--user", "--map-root-user"] if user_namespace else []), "--net"]
    return [*unshare, "--", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]


def interpret_netem_probe(returncode: int, output: str) -> Tuple[bool, str]:
    """Turn the probe's exit status and output into (works, one-line detail)."""
    if returncode == 0:
        return True, f"a netem qdisc works in kernel {platform.release()}"
    if "qdisc kind is unknown" in output:
        return False, f"kernel {platform.release()} has no sch_netem (delay/loss emulation)"
    first = output.strip().splitlines()[0] if output.strip() else f"exit status {returncode}"
    return False, f"netem probe failed: {first}"


def kernel_has_netem(timeout_s: float = KERNEL_PROBE_TIMEOUT_S) -> Tuple[bool, str]:
    """Does this kernel emulate delay? Tried for real: a netem qdisc in a throwaway
    namespace (as root after ``modprobe``; otherwise in a user namespace, which cannot run
    ``modprobe``: the kernel loads an installed ``sch_netem`` on demand unless module loading
    is restricted, as Debian 12's 6.1 did in the lab VM; see :func:`netem_module_state`)."""
    env = tools_env()
    if shutil.which("unshare", path=env["PATH"]) is None:
        return False, "the 'unshare' tool (util-linux) is missing"
    try:
        if is_root():
            kernel_has_module("sch_netem", timeout_s)  # loads it unless loaded (the lab VM does)
        proc = subprocess.run(netem_probe_args(user_namespace=not is_root()),
                              capture_output=True, text=True, timeout=timeout_s, env=env,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, f"netem probe could not run: {err}"
    return interpret_netem_probe(proc.returncode, proc.stdout + proc.stderr)


def module_state(modules_dep: str, builtin: str, loaded: bool, name: str) -> str:
    """``loaded``, ``built in``, ``not loaded`` (installed, loadable by root) or
    ``missing`` (this kernel has no such module), from the kernel's ``modules.dep`` and
    ``modules.builtin`` texts and whether ``/sys/module/NAME`` exists."""
    if loaded:
        return "loaded"
    pattern = re.compile(rf"(^|/){re.escape(name)}\.ko(\.[a-z]+)?(:|$)", re.MULTILINE)
    if pattern.search(builtin):
        return "built in"
    return "not loaded" if pattern.search(modules_dep) else "missing"


def netem_module_state(release: Optional[str] = None) -> str:
    """What :func:`module_state` says of ``sch_netem`` in the running kernel (or
    ``release``)."""
    folder = Path("/lib/modules", release or platform.release())
    texts = []
    for name in ("modules.dep", "modules.builtin"):
        try:
            texts.append((folder / name).read_text(errors="replace"))
        except OSError:
            texts.append("")
    return module_state(texts[0], texts[1], Path("/sys/module/sch_netem").exists(), "sch_netem")


def kernel_has_module(name: str, timeout_s: float = KERNEL_PROBE_TIMEOUT_S) -> bool:
    """Is kernel module ``name`` loaded or loadable (``modprobe``, as root)?"""
    if Path("/sys/module", name).exists():
        return True
    if not is_root():
        return False
    try:
        proc = subprocess.run(["modprobe", "-q", name], capture_output=True,
                              timeout=timeout_s, env=tools_env(), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and Path("/sys/module", name).exists()


def version_key(text: str) -> Tuple[int, ...]:
    """Sort key of a kernel release such as ``6.1.0-56-amd64`` (numbers compared as ints)."""
    return tuple(int(n) for n in re.findall(r"\d+", text))


def kernel_images(boot_dir: Path = Path("/boot"),
                  modules_dir: Path = Path("/lib/modules")) -> List[Path]:
    """Stock kernel images that have their modules installed, newest first."""
    found = []
    for image in boot_dir.glob("vmlinuz-*"):
        release = image.name[len("vmlinuz-"):]
        if image.is_file() and (modules_dir / release).is_dir():
            found.append(image)
    return sorted(found, key=lambda p: version_key(p.name), reverse=True)


def find_vm_kernel() -> Optional[Path]:
    """The kernel image the VM runner boots: ``$LABTOOLS_VM_KERNEL`` or the newest stock one."""
    chosen = settings.current().vm_kernel
    if chosen is not None:
        return chosen if os.path.isfile(chosen) else None  # False where unreadable
    images = kernel_images()
    return images[0] if images else None


def vm_runner_missing() -> List[Tuple[str, str]]:
    """What the VM runner lacks, as (what, how to fix) pairs; empty when it is ready."""
    missing = []
    if find_tool("vng") is None:
        missing.append(("vng (virtme-ng)", "pip install virtme-ng (or bash scripts/setup.sh)"))
    if find_tool("qemu") is None:
        pkg = "qemu-system-arm" if platform.machine() == "aarch64" else "qemu-system-x86"
        missing.append((qemu_binary(), f"apt-get install {pkg}"))
    kernel = find_vm_kernel()
    if kernel is None:
        pkg = DEBIAN_KERNEL_PACKAGES.get(platform.machine(), "a linux-image package")
        missing.append(("a stock kernel image in /boot with its modules",
                        f"apt-get install {pkg}"))
    elif not os.access(kernel, os.R_OK):  # Ubuntu's images: root only
        missing.append((f"read access to {kernel} (this user boots it)",
                        f"as root: chmod 0644 {kernel}"))
    if find_tool("busybox") is None:
        missing.append(("busybox", "apt-get install busybox-static"))
    return missing


def cache_dir() -> Path:
    """Where probe results are cached: ``$LABTOOLS_CACHE_DIR``, else ``~/.cache/labtools``
    (:class:`labtools.settings.Settings`)."""
    return settings.current().cache_dir


def kvm_device_ok() -> Tuple[bool, str]:
    """Is ``/dev/kvm`` present and readable and writable by this user?"""
    dev = Path("/dev/kvm")
    if not dev.exists():
        return False, "/dev/kvm does not exist"
    if not os.access(dev, os.R_OK | os.W_OK):
        return False, "/dev/kvm exists but this user cannot open it"
    return True, "/dev/kvm is accessible"


def kvm_probe_args(vng: str, kernel: Path) -> List[str]:
    """A minimal KVM boot that prints a marker and powers off."""
    return [vng, "--run", str(kernel), "--memory", "512M", "--cpus", "1",
            "--exec", "echo labtools-kvm-ok"]


def probe_kvm(timeout_s: float = KVM_PROBE_TIMEOUT_S) -> Tuple[bool, str]:
    """Boot a tiny KVM guest; a hung boot is killed after ``timeout_s`` seconds."""
    vng, kernel = find_tool("vng"), find_vm_kernel()
    if vng is None or kernel is None:
        return False, "cannot probe: the VM runner is not ready"
    start = time.monotonic()
    proc = subprocess.Popen(kvm_probe_args(vng, kernel), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=tools_env(), start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        return False, f"a KVM boot did not finish within {timeout_s:.0f} s"
    took = time.monotonic() - start
    if b"labtools-kvm-ok" in out:
        return True, f"a KVM boot took {took:.1f} s"
    return False, f"a KVM boot failed (exit status {proc.returncode})"


def kvm_usable(recheck: bool = False, timeout_s: float = KVM_PROBE_TIMEOUT_S,
               progress: Optional[TextIO] = None) -> Tuple[bool, str]:
    """Does KVM really work here? The probe result is cached per host and guest kernel.

    When a probe is needed (up to ``timeout_s`` seconds), a note goes to ``progress``.
    """
    ok, detail = kvm_device_ok()
    if not ok:
        return False, detail
    kernel = find_vm_kernel()
    key = f"{platform.release()}|{kernel}"
    path = cache_dir() / KVM_CACHE_FILE
    if not recheck and path.is_file():
        try:
            cached = json.loads(path.read_text())
        except (OSError, ValueError):
            cached = {}
        if isinstance(cached, dict) and cached.get("key") == key:
            return bool(cached.get("ok")), f"{cached.get('detail')} (cached; --recheck to probe)"
    if progress is not None:
        print(f"labtools: checking once whether KVM works (up to {timeout_s:.0f} s)...",
              file=progress, flush=True)
    ok, detail = probe_kvm(timeout_s)
    if kernel is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"key": key, "ok": ok, "detail": detail,
                                        "checked_at_s": time.time()}))
        except OSError:
            pass  # a read-only home only costs a new probe next time
    return ok, detail

