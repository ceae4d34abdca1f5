"""``labtools vm [options] -- CMD...``: run CMD in a throwaway VM with a stock kernel.

For hosts whose kernel cannot emulate delay (no netem). The guest sees the host's files;
the kit's project folder and the current directory are writable, so results land on the
host. The exit status is CMD's own. ``--if-needed`` runs CMD directly when this host can
run real networks natively (or when already inside the VM).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Tuple

from labtools import settings
from labtools.commands import options
from labtools.errors import InputError


def parse_forward(text: str) -> Tuple[int, int]:
    """``8888`` -> (8888, 8888); ``18888:8888`` -> host port 18888 to guest port 8888."""
    match = re.fullmatch(r"(?:(\d{1,5}):)?(\d{1,5})", text)
    if match is None:
        raise InputError(f"--forward {text!r} is not PORT or HOSTPORT:GUESTPORT")
    guest = int(match.group(2))
    host = int(match.group(1)) if match.group(1) else guest
    return host, guest


def parse_env(text: str) -> Tuple[str, str]:
    """``NAME=VALUE``, or ``NAME`` to pass this process's value of NAME."""
    name, sep, value = text.partition("=")
    if not sep:
        if name not in os.environ:
            raise InputError(f"--env {name}: no such variable in this environment")
        value = os.environ[name]
    return name, value


def strip_separator(command: List[str]) -> List[str]:
    """The command after an optional leading ``--``."""
    return command[1:] if command[:1] == ["--"] else command


def _kvm_choice(args: argparse.Namespace) -> Optional[bool]:
    return None if args.kvm is None else bool(args.kvm)


def run(args: argparse.Namespace) -> int:
    """Run the command in the VM (or natively with ``--if-needed``); its exit status."""
    from labtools.system import vm

    command = strip_separator(list(args.cmd))
    if not command:
        raise InputError("no command given: labtools vm -- CMD [ARGS...]")
    if args.if_needed:
        from labtools.lab.placement import runs_natively

        if runs_natively():  # a lab of the course (delays) would start here
            print("labtools vm: this machine runs real networks natively; running the "
                  "command here", file=sys.stderr, flush=True)
            try:
                return subprocess.run(command, check=False).returncode
            except OSError as err:
                raise InputError(f"cannot run {command[0]}: {err.strerror}") from err
    if settings.current().in_vm:
        raise InputError("already inside the VM runner's guest; run the command directly")
    return vm.run_in_vm(
        command, timeout_s=args.timeout, memory=args.memory, cpus=args.cpus,
        kvm=_kvm_choice(args), rwdirs=[Path(d) for d in args.rwdir],
        forward_ports=[parse_forward(f) for f in args.forward],
        env=[parse_env(e) for e in args.env])


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``labtools vm``."""
    p = subparsers.add_parser(
        "vm", help="run a command in a throwaway VM whose kernel can emulate networks",
        description="Boots the installed stock kernel (/boot/vmlinuz-*) with virtme-ng, "
        "the host's files read-only except the project folder and the current directory, "
        "loads sch_netem, sch_htb and openvswitch, runs CMD in the current directory and "
        "exits with CMD's status. KVM is used when a (cached) probe shows that it works, "
        "software emulation otherwise (boot about 13 s).")
    p.add_argument("--timeout", type=options.seconds, default=None, metavar="S",
                   help="stop the VM after S seconds, boot included (default: none)")
    p.add_argument("--memory", default=None, type=options.text,
                   help="guest memory, e.g. 2G (default 2G)")
    p.add_argument("--cpus", type=options.count, default=None,
                   help="guest CPUs (default up to 2)")
    kvm = p.add_mutually_exclusive_group()
    kvm.add_argument("--kvm", dest="kvm", action="store_const", const=1,
                     help="use KVM without probing")
    kvm.add_argument("--no-kvm", dest="kvm", action="store_const", const=0,
                     help="use software emulation")
    p.add_argument("--rwdir", action="append", default=[], metavar="DIR", type=options.text,
                   help="another host folder the guest may write (repeatable)")
    p.add_argument("--forward", action="append", default=[], metavar="[HOSTPORT:]PORT",
                   type=options.text,
                   help="forward 127.0.0.1:HOSTPORT on the host to PORT in the guest")
    p.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                   type=options.text,
                   help="export a variable in the guest (LABTOOLS_* are passed anyway)")
    p.add_argument("--if-needed", action="store_true",
                   help="run CMD directly when this machine runs real networks natively")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD",
                   help="the command and its arguments")
    p.set_defaults(handler=run, kvm=None)
