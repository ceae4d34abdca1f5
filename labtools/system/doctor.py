"""Can this machine run the lab, and how to fix what is missing (``labtools doctor``).

One :class:`Check` per item (the kit's settings, the VM runner's settings (each
``LABTOOLS_VM_*`` value this machine can give a VM), the lab sandbox, root, Mininet, the tools,
Open vSwitch, netem, KVM, the VM runner), each with what was found and how to fix it, then
the settings in force (:func:`settings_lines`). The slow KVM probe is cached. A lab needs
no root: its network lives in a user namespace of its own (the "lab sandbox" check says
whether this machine allows it, and which setting to change when not); only Open vSwitch
switches and loading ``sch_netem`` need root.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from labtools import settings
from labtools.errors import InputError
from labtools.system import capabilities as caps


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report.

    Attributes:
        name: what was checked (``root``, ``iperf3``, ``netem in this kernel``...).
        ok: whether it passed.
        detail: what was found (version, path, reason).
        fix: how to fix a failing check (empty when it passed).
        required: whether the kit needs it (netem and the VM runner: one of the two).
    """

    name: str
    ok: bool
    detail: str
    fix: str
    required: bool = True


#: check name -> (tool, fix when missing) for the plain tools
TOOL_CHECKS: Dict[str, Tuple[str, str]] = {
    "iperf": ("iperf", "apt-get install iperf (or bash scripts/setup.sh)"),
    "iperf3": ("iperf3", "apt-get install iperf3 (or bash scripts/setup.sh)"),
    "ping": ("ping", "apt-get install iputils-ping (or bash scripts/setup.sh)"),
    "bridge utilities": ("brctl", "apt-get install bridge-utils (or bash scripts/setup.sh)"),
}


def _tool_check(name: str) -> Check:
    tool, fix = TOOL_CHECKS[name]
    info = caps.tool_info(tool)
    if info.path is None:
        return Check(name, False, f"'{tool}' not found on PATH", fix)
    return Check(name, True, f"{info.version or 'unknown version'} ({info.path})", "")


def _settings_check() -> Check:
    """The environment's settings (:mod:`labtools.settings`) hold values the kit can use."""
    from labtools.errors import InputError

    try:
        found = settings.current()
    except InputError as err:
        return Check("settings", False, str(err), "unset the variable, or give it a value "
                     "the kit takes (labtools/settings.py describes each)")
    return Check("settings", True, f"emulation {found.emulation.value}, mode {found.mode}", "")


#: how to fix a VM setting the VM runner cannot use
VM_SETTINGS_FIX = ("unset the variable, or give it a value this machine can give the VM "
                   "(labtools/settings.py describes each)")


def machine_memory_mib() -> Optional[int]:
    """This machine's memory in MiB (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    except (ValueError, OSError):
        return None


def vm_setting_problems(chosen: settings.Settings) -> List[str]:
    """Why the VM runner could not use the ``LABTOOLS_VM_*`` settings on this machine, one
    reason each (empty when it can): memory not in QEMU's notation or beyond this machine's,
    more CPUs than it has, a kernel image that is not a readable file, KVM asked for where
    ``/dev/kvm`` cannot be opened. (Values that are not even of the right kind, such as
    ``LABTOOLS_VM_CPUS=two``, fail the settings check before.)"""
    from labtools.errors import InputError
    from labtools.system.vm import memory_mib

    problems = []
    if chosen.vm_memory_chosen:
        try:
            memory = memory_mib(chosen.vm_memory)
        except InputError:
            problems.append(f"LABTOOLS_VM_MEMORY={chosen.vm_memory!r} is not like 2G or 1536M")
        else:
            total = machine_memory_mib()
            if total is not None and memory > total:
                problems.append(f"LABTOOLS_VM_MEMORY={chosen.vm_memory} is more than this "
                                f"machine's {total} MiB")
    cores = os.cpu_count()
    if chosen.vm_cpus is not None and cores is not None and chosen.vm_cpus > cores:
        problems.append(f"LABTOOLS_VM_CPUS={chosen.vm_cpus} is more than this machine's "
                        f"{cores} CPUs")
    kernel = chosen.vm_kernel
    if kernel is not None and not kernel.is_file():
        problems.append(f"LABTOOLS_VM_KERNEL={kernel} is not a file")
    elif kernel is not None and not os.access(kernel, os.R_OK):
        problems.append(f"LABTOOLS_VM_KERNEL={kernel} cannot be read by this user")
    if chosen.vm_kvm:
        ok, detail = caps.kvm_device_ok()
        if not ok:
            problems.append(f"LABTOOLS_VM_KVM=1 but {detail}")
    return problems


def _vm_settings_check() -> Check:
    """The VM runner's settings (``LABTOOLS_VM_*``) hold values it can use here."""
    chosen = settings.current()
    if chosen.in_vm:
        return Check("VM settings", True, "not used inside the VM runner's guest", "")
    problems = vm_setting_problems(chosen)
    if problems:
        return Check("VM settings", False, "; ".join(problems), VM_SETTINGS_FIX)
    return Check("VM settings", True, f"memory {chosen.vm_memory}, "
                 f"cpus {chosen.vm_cpus or 'the default'}, "
                 f"kernel {chosen.vm_kernel or 'the newest stock one'}", "")


def _sandbox_check() -> Check:
    from labtools.system.userns import sandbox_ok

    ok, detail, fix = sandbox_ok()
    return Check("lab sandbox", ok, detail, fix)


def _root_check() -> Check:
    if caps.is_root():
        return Check("root", True, "running as root", "", required=False)
    return Check("root", False, "not running as root (labs with Linux bridges need none)",
                 "optional: only Open vSwitch switches (--switch ovs) need root (sudo)",
                 required=False)


def _mininet_check() -> Check:
    ok, detail = caps.mininet_available()
    if ok:
        version = caps.tool_info("mn").version
        return Check("Mininet", True, f"{version or 'unknown version'}, {detail}", "")
    return Check("Mininet", False, detail,
                 "apt-get install mininet and use a venv with --system-site-packages "
                 "(bash scripts/setup.sh does both; avoid the PyPI 'mininet')")


def _ovs_check() -> Check:
    info = caps.tool_info("ovs-vsctl")
    fix = ("optional: the kit uses Linux bridges; for OVS switches run in the VM runner "
           "(labtools vm -- CMD) or load the openvswitch module")
    if info.path is None:
        return Check("Open vSwitch", False, "'ovs-vsctl' not found",
                     "optional: apt-get install openvswitch-switch", required=False)
    if not caps.kernel_has_module("openvswitch"):
        return Check("Open vSwitch", False, f"tools {info.version}, but this kernel has no "
                     "openvswitch module", fix, required=False)
    return Check("Open vSwitch", True, f"{info.version}, kernel module present (OVS "
                 "switches need root)", "", required=False)


#: what to do where this kernel cannot emulate links at all
USE_THE_VM = "use the VM runner (labtools vm -- CMD); make test and make lab use it on their own"


def netem_fix(state: str) -> str:
    """What to do when the netem probe failed, from :func:`caps.netem_module_state`: load
    an installed module as root on the host (a lab's user namespace, or a container, cannot
    run modprobe, and this kernel did not load it on demand), or use the VM runner where
    this kernel has none."""
    if state == "not loaded":
        return ("as root on the host: modprobe sch_netem (at every boot: echo sch_netem > "
                "/etc/modules-load.d/labtools.conf); a user namespace or a container cannot "
                "run modprobe. Or " + USE_THE_VM)
    return USE_THE_VM


def _netem_check() -> Check:
    ok, detail = caps.kernel_has_netem()
    state = caps.netem_module_state()
    return Check("netem in this kernel", ok, f"{detail}; sch_netem module: {state}",
                 "" if ok else netem_fix(state), required=False)


def _kvm_check(recheck: bool) -> Check:
    if settings.current().in_vm:
        return Check("KVM", True, "not needed inside the VM runner's guest", "", required=False)
    ok, detail = caps.kvm_usable(recheck=recheck, progress=sys.stderr)
    fix = ("" if ok else "optional: the VM runner falls back to software emulation (boot "
           "about 13 s); enable (nested) virtualisation and access to /dev/kvm to speed it up")
    return Check("KVM", ok, detail, fix, required=False)


def _vm_runner_check() -> Check:
    if settings.current().in_vm:
        return Check("VM runner", True, "running inside the VM runner's guest", "",
                     required=False)
    missing = caps.vm_runner_missing()
    if missing:
        return Check("VM runner", False, "missing " + ", ".join(w for w, _ in missing),
                     "; ".join(f for _, f in missing), required=False)
    kernel = caps.find_vm_kernel()
    return Check("VM runner", True, f"vng {caps.tool_info('vng').version}, kernel {kernel}",
                 "", required=False)


#: the checks in report order (name -> function(recheck) -> Check)
CHECKS: Dict[str, Callable[[bool], Check]] = {
    "settings": lambda recheck: _settings_check(),
    "VM settings": lambda recheck: _vm_settings_check(),
    "lab sandbox": lambda recheck: _sandbox_check(),
    "root": lambda recheck: _root_check(),
    "Mininet": lambda recheck: _mininet_check(),
    "iperf": lambda recheck: _tool_check("iperf"),
    "iperf3": lambda recheck: _tool_check("iperf3"),
    "ping": lambda recheck: _tool_check("ping"),
    "bridge utilities": lambda recheck: _tool_check("bridge utilities"),
    "Open vSwitch": lambda recheck: _ovs_check(),
    "netem in this kernel": lambda recheck: _netem_check(),
    "KVM": _kvm_check,
    "VM runner": lambda recheck: _vm_runner_check(),
}


#: checks that only matter where the kernel cannot emulate links (the VM runner's)
VM_ONLY = ("KVM", "VM runner")


def collect_checks(recheck: bool = False) -> List[Check]:
    """Run every check (the KVM probe again when ``recheck``). Where this kernel emulates
    links itself, the VM runner's checks are not run: they say they are not needed. With
    settings the kit cannot use, that is the only check (every other one reads them)."""
    done: Dict[str, Check] = {}
    for name, fn in CHECKS.items():  # the netem check comes before the VM runner's
        netem = done.get("netem in this kernel")
        if name != "settings" and not done["settings"].ok:
            break
        if name in VM_ONLY and netem is not None and netem.ok:
            done[name] = Check(name, True, "not needed: this kernel emulates links (netem)",
                               "", required=False)
        else:
            done[name] = fn(recheck)
    return list(done.values())


def kit_can_work(checks: List[Check]) -> bool:
    """Every required check passed, and netem works natively or the VM runner is ready."""
    by_name = {c.name: c for c in checks}
    required_ok = all(c.ok for c in checks if c.required)
    return required_ok and any(by_name[name].ok for name in ("netem in this kernel", "VM runner")
                               if name in by_name)


def format_line(check: Check) -> str:
    """``ok   name: detail`` or ``FAIL name: detail — fix: ...``."""
    if check.ok:
        return f"ok   {check.name}: {check.detail}"
    return f"FAIL {check.name}: {check.detail} — fix: {check.fix}"


def verdict(checks: List[Check]) -> str:
    """One sentence: natively, through the VM runner, or not at all."""
    by_name = {c.name: c for c in checks}
    if not kit_can_work(checks):
        return "the kit cannot run real networks here yet: fix the required FAIL lines above"
    if by_name["netem in this kernel"].ok:
        return "the kit runs real networks natively on this machine"
    return ("the kit runs real networks through the VM runner (labtools vm -- CMD); "
            "make test and make lab use it on their own")


def settings_lines() -> List[str]:
    """The settings in force, one line each: ``LABTOOLS_MODE=student`` or, when unset,
    ``LABTOOLS_MODE (unset): instructor``."""
    lines = ["settings (environment variables; what each does: labtools doctor --json, "
             "labtools/settings.py):"]
    for variable, value in settings.in_force():
        shown = f"={value}" if value is not None else f" (unset): {variable.default}"
        lines.append(f"  {variable.name}{shown}")
    try:
        ignored = settings.current().show_answers_ignored
    except InputError:
        ignored = False  # the settings' own check above says what is wrong
    if ignored:
        lines.append(f"  note: {settings.SHOW_ANSWERS_IGNORED}")
    return lines


def settings_as_dicts() -> List[Dict[str, object]]:
    """The JSON form of the settings in force: ``{name, value, default, effect, set_by}``
    (``value`` None when unset: the default holds)."""
    return [{"name": v.name, "value": value, "default": v.default, "effect": v.effect,
             "set_by": v.set_by} for v, value in settings.in_force()]


def checks_as_dicts(checks: List[Check]) -> List[Dict[str, object]]:
    """The JSON form: a list of ``{name, ok, detail, fix}``."""
    return [{"name": c.name, "ok": c.ok, "detail": c.detail, "fix": c.fix} for c in checks]
