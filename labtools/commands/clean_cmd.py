"""``labtools clean``: remove what a crashed lab left behind (like ``mn -c``).

    labtools clean [--dry-run] [--no-mn] [--json]

A lab with Linux bridges leaves nothing (its sandbox ends with it); this is for labs with
Open vSwitch and labs of older versions of the kit. Stops the kit's leftover processes
(``mnexec``, Mininet node shells, and iperf, iperf3, ping, simpleperf running inside a
host's network namespace; the processes of a sandbox whose holder was killed too), deletes
Mininet-style interfaces (``h1-eth0``), the kit's switch bridges (``s1``), Open vSwitch
bridges of that name, ``labtools-*`` namespaces, and a lab VM (its processes and its
runner's ``labtools-vm-*`` folder) whose ``labtools vm`` was killed, then runs Mininet's
``mn -c`` unless ``--no-mn`` or sandboxed labs are running (``mn -c`` kills every ``ping``
on the machine, theirs too, and deletes ``/tmp/*.log``). Running labs, of any user, are
never touched. Prints what it removed, or ``nothing to clean``; exit status 0 (1 when
something could not be removed). JSON keys: dry_run, count, processes [{pid, name,
cmdline, start_ticks}], interfaces, bridges, ovs_bridges, namespaces, folders, failed,
mn_output, running_labs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

#: command lines longer than this are shortened in the text output (JSON has them whole)
CMDLINE_CHARS = 100


def add_parser(sub: Any) -> None:
    """Register ``labtools clean``."""
    p = sub.add_parser("clean", help="remove leftovers of a crashed run (like mn -c)",
                       description="Remove the processes, interfaces, bridges and "
                       "namespaces a crashed lab left behind.")
    p.add_argument("--dry-run", action="store_true", help="only show what would be removed")
    p.add_argument("--no-mn", action="store_true",
                   help="do not run Mininet's own `mn -c` afterwards")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Clean (or show); return 0, or 1 when something could not be removed."""
    from labtools.system.cleanup import clean

    result = clean(dry_run=args.dry_run, mininet=not args.no_mn)
    if args.json:
        print(json.dumps({"dry_run": args.dry_run, **result.to_dict()}, indent=2))
        return 1 if result.failed else 0
    verb = "would remove" if args.dry_run else "removed"
    if result.count() == 0:
        print("nothing to clean")
    else:
        print(f"{verb} {result.describe()}")
        for proc in result.processes:
            line = proc.cmdline if len(proc.cmdline) <= CMDLINE_CHARS else \
                proc.cmdline[:CMDLINE_CHARS - 3] + "..."
            print(f"  process {proc.pid} ({proc.name}): {line}")
        for title, names in (("interfaces", result.interfaces), ("bridges", result.bridges),
                             ("OVS bridges", result.ovs_bridges),
                             ("namespaces", result.namespaces),
                             ("VM folders", result.folders)):
            if names:
                print(f"  {title}: {' '.join(names)}")
    if result.mn_output:
        print("ran mn -c (Mininet's own cleanup)")
    elif result.running_labs and not args.no_mn and not args.dry_run:
        print(f"did not run mn -c: {result.running_labs} sandboxed lab(s) running (it would "
              "kill their pings)")
    for line in result.failed:
        print(f"could not remove {line}")
    return 1 if result.failed else 0
