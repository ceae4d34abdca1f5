"""Did a test run leave anything behind? ``labtools clean --dry-run`` before and after.

    python tests/support/leftover_check.py before FILE     # what was there already (JSON)
    python tests/support/leftover_check.py after FILE      # exit 1 naming what is new

``make test`` (scripts/test.sh) takes the first reading before its stages and the second
at its end: a leftover process, interface, bridge, namespace or VM folder that was not
there before is a failure of the run. Something still winding down (a VM stopping) is
given up to ``SETTLE_S`` seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Dict, List, Set

from labtools.system.cleanup import find_leftovers

#: how long leftovers may take to go away at the end of a run, seconds
SETTLE_S = 30.0
KINDS = ("processes", "interfaces", "bridges", "ovs_bridges", "namespaces", "folders")


def reading() -> Dict[str, List[str]]:
    """What ``labtools clean --dry-run`` would remove now, by kind (a process as its
    name and command line: PIDs differ from one reading to the next)."""
    found = find_leftovers()
    listed = found.to_dict()
    out = {kind: sorted(str(item) for item in listed[kind]) for kind in KINDS[1:]}
    out["processes"] = sorted(f"{p.name}: {p.cmdline}" for p in found.processes)
    return out


def new_since(before: Dict[str, List[str]], now: Dict[str, List[str]]) -> List[str]:
    """What ``now`` has that ``before`` had not, as lines ``kind: item``."""
    lines = []
    for kind in KINDS:
        known: Set[str] = set(before.get(kind, []))
        lines += [f"{kind}: {item}" for item in now.get(kind, []) if item not in known]
    return lines


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("before", "after"):
        print("usage: leftover_check.py before|after FILE", file=sys.stderr)
        return 2
    path = Path(argv[1])
    if argv[0] == "before":
        path.write_text(json.dumps(reading(), indent=1))
        return 0
    before = json.loads(path.read_text())
    deadline = time.monotonic() + SETTLE_S
    while True:
        left = new_since(before, reading())
        if not left or time.monotonic() > deadline:
            break
        time.sleep(2)
    if left:
        print(f"the run left {len(left)} thing(s) behind (labtools clean would remove them):")
        print("\n".join(f"  {line}" for line in left))
        return 1
    print("nothing left behind (labtools clean --dry-run as before the run)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
