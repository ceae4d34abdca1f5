"""``labtools doctor [--json] [--recheck]``: can this machine run the lab, and how to fix it.

One line per check (``ok   lab sandbox``, ``FAIL netem in this kernel -- fix: ...``): whether
this user can give a lab a sandbox of its own (unprivileged user namespaces; if not, the
setting to change), root (only Open vSwitch needs it), the tools, whether ``sch_netem`` is
loaded, KVM and the VM runner. Then what the last calibration measured (what this machine
adds to an emulated network and the most it forwards) and whether the reference lab's rates
fit it. With ``--json``:
``{"checks": [{"name", "ok", "detail", "fix"}...], "calibration": {...} or null}`` (``fix``
is ``""`` when the check passed). Exit status 0 when the kit can work, natively or
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
    verdict,
)


def run(args: argparse.Namespace) -> int:
    """Print the report; 0 when the kit can work here, 1 otherwise."""
    from labtools.lab.calibration import calibration_lines, last_calibration
    from labtools.model.catalog import load_topology

    checks = collect_checks(recheck=args.recheck)
    if args.json:
        machine = last_calibration()
        print(json.dumps({"checks": checks_as_dicts(checks),
                          "calibration": None if machine is None else machine.as_dict()},
                         indent=2))
    else:
        for check in checks:
            print(format_line(check))
        print(verdict(checks))
        for line in calibration_lines(load_topology("portfolio")):
            print(line)
    return 0 if kit_can_work(checks) else 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``labtools doctor``."""
    p = subparsers.add_parser(
        "doctor", help="check that this machine can run the lab, and how to fix it",
        description="Checks the lab sandbox (user namespaces: a lab needs no root), root "
        "(only Open vSwitch needs it), Mininet, iperf, iperf3, ping, bridge utilities, Open "
        "vSwitch, netem in this kernel (and whether sch_netem is loaded), KVM and the VM "
        "runner. Exit status 0 when the kit can work (natively or through the VM runner), "
        "1 otherwise.")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of {name, ok, detail, fix}")
    p.add_argument("--recheck", action="store_true",
                   help="probe KVM again instead of using the cached result")
    p.set_defaults(handler=run)
