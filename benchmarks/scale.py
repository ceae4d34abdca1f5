"""Benchmark: how large a network this machine starts, star and tree, kit and plain Mininet.

Needs root. The star and tree topologies have no shaping and no delay, so they run on a
kernel without netem too: ``bench.py`` runs this natively and again inside the VM. For each
kind and size (10, 100, 500, 1000 hosts), ``--repeat`` times: the kit's start and stop time
(``MininetBackend``), the memory the running network takes (``MemAvailable`` before and
after, each read once it holds still with the page cache dropped), and a ping sample from
the first host to the last (3 pings). Plain Mininet (Python API, Linux bridges, no
controller) starts the same network up to ``--mininet-max`` hosts, once per size. A size
whose start took more than ``--limit`` seconds ends that kind: larger ones are not tried
(reported as skipped).

    python benchmarks/scale.py --sizes 10,100,500,1000 --repeat 3 --out results/scale.json
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from common import ROOT, plain_mininet, say, settled_available_mib, spread, timed, write_json

KINDS = {"star": "star,hosts={n}", "tree": "tree,hosts={n},fanout=10"}
LIMIT_S = 300.0


def ping_sample(backend: Any, topo: Any) -> Optional[float]:
    """Average RTT (ms) of 3 pings from the first host to the last, or None."""
    from labtools.model.routing import compute_routing

    first, last = topo.hosts[0], topo.hosts[-1]
    ip = compute_routing(topo).target(first, last).ip
    proc = backend.popen(first, ["ping", "-c", "3", "-i", "0.2", "-W", "2", ip])
    out, _ = proc.communicate(timeout=60)
    found = re.search(r"= [\d.]+/([\d.]+)/", out or "")
    return float(found.group(1)) if found else None


def kit_once(spec: str) -> Dict[str, Any]:
    from labtools.lab.network import MininetBackend
    from labtools.model.catalog import load_topology

    topo = load_topology(spec)
    backend = MininetBackend(topo, "lxbr")
    before = settled_available_mib()
    start_s, _ = timed(backend.start)
    used = before - settled_available_mib()
    try:
        rtt = ping_sample(backend, topo)
    finally:
        stop_s, _ = timed(backend.stop)
    return {"start_s": start_s, "stop_s": stop_s, "memory_mib": used, "ping_ms": rtt,
            "phases": dict(backend.phase_s)}


def run(sizes: List[int], repeat: int, limit_s: float, mininet_max: int,
        save: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    """Every kind and size; ``save(out)`` after each size, so a failure keeps the others."""
    out: Dict[str, Any] = {"sizes": sizes, "repeat": repeat, "limit_s": limit_s, "kinds": {}}
    for kind, pattern in KINDS.items():
        rows: Dict[str, Any] = out["kinds"].setdefault(kind, {})
        stopped = False
        for n in sizes:
            if stopped:
                rows[str(n)] = {"skipped": f"a smaller {kind} took more than {limit_s:.0f} s"}
                continue
            spec = pattern.format(n=n)
            runs = []
            for i in range(repeat):
                say(f"scale: {spec} ({i + 1}/{repeat})")
                runs.append(kit_once(spec))
                if runs[-1]["start_s"] > limit_s:
                    break
            row: Dict[str, Any] = {key: spread([r[key] for r in runs])
                                   for key in ("start_s", "stop_s", "memory_mib", "ping_ms")}
            row["runs"] = runs
            if n <= mininet_max:
                say(f"scale: {spec} with plain Mininet")
                row["mininet"] = plain_mininet(spec, shaped=False)
            rows[str(n)] = row
            save(out)
            stopped = max(r["start_s"] for r in runs) > limit_s
    save(out)  # the sizes skipped at the end too
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,500,1000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=float, default=LIMIT_S)
    parser.add_argument("--mininet-max", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/scale.json")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    run(sizes, args.repeat, args.limit, args.mininet_max, lambda out: write_json(args.out, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
