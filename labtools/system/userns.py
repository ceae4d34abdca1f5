"""Can this user give a lab a sandbox of its own, and what to change when it cannot.

A lab's network lives in a user namespace and network namespaces of the user who starts it
(:mod:`labtools.lab.sandbox`): no root needed, nothing in the machine's own namespace. The
kernel allows it unless a setting forbids it, and distributions differ in which one:

- ``kernel.unprivileged_userns_clone`` (Debian's kernels before 5.10, some hardened ones): 0
  forbids it;
- ``user.max_user_namespaces``: 0 forbids it (some hardening guides set it);
- ``kernel.apparmor_restrict_unprivileged_userns`` (Ubuntu 23.10 and later): 1 lets an
  ordinary user make the namespace but takes its capabilities away in it (no bridge, no
  veth);
- Docker's default seccomp profile refuses ``unshare(CLONE_NEWUSER)`` in a container.

:func:`probe_args` is what is tried: a bridge, a veth pair and an HTB qdisc in a throwaway
user and network namespace (what a lab builds). :func:`explain_failure` is pure: the probe's
output and those settings in, the reason and what to change out. :func:`sandbox_ok` runs the
probe; as root it also tries it as an ordinary user (uid 65534), so an administrator learns
whether the machine's students can run labs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from labtools.system.toolenv import tools_env

#: what the probe builds in its throwaway namespaces (what a lab's network needs)
PROBE_SCRIPT = ("ip link add lt0 type bridge && ip link add lt1 type veth peer name lt2 && "
                "tc qdisc add dev lt1 root handle 5: htb default 1")
#: the user an administrator's check runs the probe as (``nobody``)
ORDINARY_UID = 65534
PROBE_TIMEOUT_S = 20.0
#: sysctl -> (the value that forbids an ordinary user's sandbox, what to change)
BLOCKING_SYSCTLS: Dict[str, Tuple[str, str]] = {
    "kernel.unprivileged_userns_clone": (
        "0", "as root: sysctl -w kernel.unprivileged_userns_clone=1 (and put "
             "'kernel.unprivileged_userns_clone = 1' in /etc/sysctl.d/60-labtools.conf)"),
    "user.max_user_namespaces": (
        "0", "as root: sysctl -w user.max_user_namespaces=15000 (and put "
             "'user.max_user_namespaces = 15000' in /etc/sysctl.d/60-labtools.conf)"),
    "kernel.apparmor_restrict_unprivileged_userns": (
        "1", "as root: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (and put it in "
             "/etc/sysctl.d/60-labtools.conf), or give unshare and nsenter an AppArmor "
             "profile with the 'userns,' rule (Ubuntu 23.10 and later)"),
}
#: what to change inside a container whose seccomp profile refuses user namespaces
CONTAINER_FIX = ("start the container with a seccomp profile that allows unshare and clone "
                 "with CLONE_NEWUSER (docker run --security-opt seccomp=PROFILE.json); "
                 "no capability and no --privileged are needed")


def probe_args(as_ordinary_user: bool = False) -> List[str]:
    """The probe: a bridge, a veth pair and HTB in a throwaway user and network namespace
    (gone with the process). ``as_ordinary_user`` (for root): as uid 65534, no groups."""
    probe = ["unshare", "--user", "--map-root-user", "--net", "--", "sh", "-c", PROBE_SCRIPT]
    if not as_ordinary_user:
        return probe
    return ["setpriv", f"--reuid={ORDINARY_UID}", f"--regid={ORDINARY_UID}", "--clear-groups",
            "--", *probe]


def sysctl_path(name: str) -> Path:
    """``kernel.x`` -> ``/proc/sys/kernel/x``."""
    return Path("/proc/sys", *name.split("."))


def read_sysctls(names: Optional[List[str]] = None) -> Dict[str, str]:
    """The values of the sysctls that can forbid a sandbox (absent ones are left out: most
    kernels have only some of them)."""
    values = {}
    for name in names if names is not None else list(BLOCKING_SYSCTLS):
        try:
            values[name] = sysctl_path(name).read_text().strip()
        except OSError:
            continue
    return values


def in_container() -> bool:
    """True inside a Docker or Podman container (their marker files)."""
    return Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()


def explain_failure(output: str, sysctls: Mapping[str, str],
                    container: bool = False) -> Tuple[str, str]:
    """(what failed, what to change) for a probe that failed with ``output``, given the
    values of :data:`BLOCKING_SYSCTLS` (``sysctls``) and whether this is a container."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    said = lines[-1] if lines else "no output"
    for name, (forbidding, fix) in BLOCKING_SYSCTLS.items():
        if sysctls.get(name) == forbidding:
            return f"{name} is {forbidding} ({said})", fix
    if container:
        return f"refused in this container ({said})", CONTAINER_FIX
    if "No space left on device" in output:  # ENOSPC: a user namespace limit is reached
        return (f"the limit of user namespaces is reached ({said})",
                BLOCKING_SYSCTLS["user.max_user_namespaces"][1])
    if "unshare" in said and "not found" in said:
        return said, "apt-get install util-linux (unshare, nsenter)"
    return (f"the kernel refused it ({said})",
            "allow unprivileged user namespaces (see labtools doctor and docs/running.md, "
            "'Labs without root')")


def _probe(as_ordinary_user: bool, timeout_s: float) -> Tuple[int, str]:
    try:
        proc = subprocess.run(probe_args(as_ordinary_user), capture_output=True, text=True,
                              timeout=timeout_s, check=False, stdin=subprocess.DEVNULL,
                              env=tools_env())
    except subprocess.TimeoutExpired:
        return 124, f"the probe did not finish within {timeout_s:g} s"
    except OSError as err:
        return 127, f"{err.filename or 'unshare'}: {err.strerror}: not found"
    return proc.returncode, proc.stdout + proc.stderr


def sandbox_ok(timeout_s: float = PROBE_TIMEOUT_S) -> Tuple[bool, str, str]:
    """(works, what was found, what to change) for a lab's sandbox on this machine. As
    root, also whether an ordinary user's labs work (it says so; the lab itself works
    for root either way)."""
    status, output = _probe(False, timeout_s)
    if status != 0:
        detail, fix = explain_failure(output, read_sysctls(), in_container())
        return False, detail, fix
    if os.geteuid() != 0:
        return True, "user namespaces work for this user: bridges, veth and HTB tried", ""
    status, output = _probe(True, timeout_s)
    if status == 0:
        return True, "user namespaces work, for root and for ordinary users", ""
    detail, fix = explain_failure(output, read_sysctls(), in_container())
    return True, f"works for root; ordinary users' labs cannot start: {detail} - fix: {fix}", ""
