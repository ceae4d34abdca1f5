"""Write seccomp-userns.json: the system calls a lab container may make.

Docker's default profile lets a container without CAP_SYS_ADMIN make no namespace at all
(``clone``/``unshare`` with namespace flags, ``setns``, ``mount``); a lab's network lives
in user and network namespaces, so the kit needs a profile of its own. This one is an
allow list, like Docker's: every system call Linux's headers name for x86-64 and for the
generic table (arm64), except the ones below, which a lab never needs and which reach parts
of the kernel that user namespaces do not fence off (modules, keyrings, BPF, io_uring,
perf, the clock, swap, reboot, other processes' memory). A call the list does not name
(a system call newer than these headers, or a 32-bit one) fails with ENOSYS, so the C
library falls back to an older call where it has one.

With it, the container still runs with every capability dropped and no new privileges:
namespaces a user makes give them power over those namespaces only.

    python3 deploy/image/seccomp.py            # rewrites deploy/image/seccomp-userns.json
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Set

HEADERS = (Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           Path("/usr/include/asm-generic/unistd.h"))
OUT = Path(__file__).resolve().parent / "seccomp-userns.json"

#: refused with EPERM, by what they reach
DENIED: Dict[str, List[str]] = {
    "kernel modules and kexec": [
        "init_module", "finit_module", "delete_module", "create_module", "query_module",
        "get_kernel_syms", "kexec_load", "kexec_file_load"],
    "the whole machine": [
        "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "settimeofday",
        "clock_settime", "stime", "syslog", "vhangup", "nfsservctl", "_sysctl", "sysfs",
        "ustat", "uselib", "lookup_dcookie"],
    "kernel keyrings (not namespaced)": ["keyctl", "add_key", "request_key"],
    "BPF, perf and userfaultfd": ["bpf", "perf_event_open", "userfaultfd"],
    "io_uring (a large attack surface; a lab does not use it)": [
        "io_uring_setup", "io_uring_enter", "io_uring_register"],
    "other processes' memory and NUMA placement": [
        "process_vm_readv", "process_vm_writev", "kcmp", "mbind", "set_mempolicy",
        "migrate_pages", "move_pages", "set_mempolicy_home_node"],
    "file handles (reach files outside the container)": ["open_by_handle_at"],
    "raw hardware": ["ioperm", "iopl", "vm86", "vm86old", "pciconfig_read",
                     "pciconfig_write", "pciconfig_iobase"],
}

#: allowed with any argument: what user and network namespaces need
NAMESPACE_CALLS = ("clone", "clone3", "unshare", "setns", "mount", "umount2", "pivot_root",
                   "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
                   "mount_setattr")


def syscall_names(headers=HEADERS) -> Set[str]:
    """Every ``__NR_name`` the headers define (64-bit and generic tables)."""
    names: Set[str] = set()
    for header in headers:
        names |= set(re.findall(r"#define __NR3?2?_([a-z0-9_]+)\s", header.read_text()))
    return {n for n in names if not n.startswith("syscalls") and n != "arch_specific_syscall"}


def profile(names: Set[str]) -> dict:
    """The profile: the allowed calls, then the refused ones (EPERM)."""
    denied = sorted({n for group in DENIED.values() for n in group})
    missing = [n for n in NAMESPACE_CALLS if n not in names]
    if missing:
        raise SystemExit(f"the headers lack {missing}: use newer linux-libc-dev")
    allowed = sorted(names - set(denied))
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 38,  # ENOSYS: unknown calls look absent, the C library falls back
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"],
        "syscalls": [
            {"names": allowed, "action": "SCMP_ACT_ALLOW"},
            {"names": denied, "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
        ],
    }


def main() -> int:
    OUT.write_text(json.dumps(profile(syscall_names()), indent=1) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
