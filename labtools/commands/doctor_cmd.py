"""``labtools doctor [--json] [--recheck]``: can this machine run the lab, and how to fix it.

One line per check (``ok   lab sandbox``, ``FAIL netem in this kernel -- fix: ...``): the
kit's settings, and the VM runner's (memory, CPUs, kernel image and KVM this machine can
give a VM); whether this user can give a lab a sandbox of its own (unprivileged user
namespaces; if not, the setting to change), root (only Open vSwitch needs it), the tools,
whether ``sch_netem`` is loaded, KVM and the VM runner. Then what the last calibration
measured (what this machine adds to an emulated network and the most it forwards), whether
the reference lab's rates fit it, and the settings in force (:mod:`labtools.settings`: every
environment variable the kit reads, its value or default, and what it does).
With ``--json``: ``{"checks": [{"name", "ok", "detail", "fix"}...], "calibration": {...} or null,
"settings": [{"name", "value", "default", "effect", "set_by"}...]}`` (``fix`` is ``""`` when
the check passed; ``value`` null when unset). Exit status 0 when the kit can work, natively or
through the VM runner; 1 otherwise. The slow KVM probe is cached; ``--recheck`` runs it again.
"""

from __future__ import annotations

import argparse
import json

from labtools.system.doctor import (
    checks_as_dicts,
    collect_checks,
    format_line,
    kit_can_work,
    settings_as_dicts,
    settings_lines,
    verdict,
)

#: what ``labtools doctor --help`` says first
DESCRIPTION = (
    "Checks the kit's settings (environment variables; the VM runner's LABTOOLS_VM_* ones "
    "against this machine), the lab sandbox (user namespaces: a "
    "lab needs no root), root (only Open vSwitch needs it), Mininet, iperf, iperf3, ping, "
    "bridge utilities, Open vSwitch, netem in this kernel (and whether sch_netem is loaded), "
    "KVM and the VM runner, then prints the settings in force. Exit status 0 when the kit "
    "can work (natively or through the VM runner), 1 otherwise.")


def run(args: argparse.Namespace) -> int:
    """Print the report; 0 when the kit can work here, 1 otherwise."""
    from labtools.lab.calibration import calibration_lines, last_calibration
    from labtools.model.catalog import load_topology

    checks = collect_checks(recheck=args.recheck)
    usable = checks[0].ok  # the settings: the calibration's folder is one of them
    if args.json:
        machine = last_calibration() if usable else None
        print(json.dumps({"checks": checks_as_dicts(checks),
                          "calibration": None if machine is None else machine.as_dict(),
                          "settings": settings_as_dicts()}, indent=2))
    else:
        for check in checks:
            print(format_line(check))
        print(verdict(checks))
        shown = calibration_lines(load_topology("portfolio")) if usable else []
        for line in shown + settings_lines():
            print(line)
    return 0 if kit_can_work(checks) else 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``labtools doctor``."""
    p = subparsers.add_parser("doctor", description=DESCRIPTION, help="check that this "
                              "machine can run the lab, and how to fix it")
    p.add_argument("--json", action="store_true",
                   help="print the checks, the calibration and the settings as JSON")
    p.add_argument("--recheck", action="store_true",
                   help="probe KVM again instead of using the cached result")
    p.set_defaults(handler=run)
