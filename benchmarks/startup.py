"""Benchmark: how long a lab takes to start and stop, the kit against plain Mininet.

Needs root and a kernel with netem (run it through ``bench.py``, which uses the VM when
this kernel has none). On ``portfolio`` (9 hosts, 4 routers, 2 switches), ``--repeat``
times, alternating:

- the kit's network alone (``MininetBackend``: Linux bridges, every node configured by one
  batched script), with the seconds of each phase;
- the kit's lab as a notebook starts it (``LabSession``: the network plus the machine's
  calibration network and its measurement);
- plain Mininet on the same topology through its Python API (``Mininet(...)``, Linux
  bridges, no controller, ``TCLink``): build+start, then stop;
- ``mn --custom topologies/portfolio.py --topo portfolio --switch lxbr --controller none
  --link tc --test none``: the command line a Mininet user types (start, stop, exit).

One extra kit start runs under cProfile; its top functions are kept.

    python benchmarks/startup.py --repeat 3 --out benchmarks/results/startup.json
"""

from __future__ import annotations

import cProfile
import io
import pstats
import subprocess
import sys
from typing import Any, Dict, List

from common import ROOT, plain_mininet, run_repeated, say, spread, timed

TOPOLOGY = "portfolio"
MN_COMMAND = ["mn", "--custom", str(ROOT / "topologies" / "portfolio.py"), "--topo", "portfolio",
              "--switch", "lxbr", "--controller", "none", "--link", "tc", "--test", "none"]


def kit_network() -> Dict[str, Any]:
    """One start and stop of the kit's network alone."""
    from labtools.lab.network import MininetBackend
    from labtools.model.catalog import load_topology

    backend = MininetBackend(load_topology(TOPOLOGY), "lxbr")
    start_s, _ = timed(backend.start)
    phases = dict(backend.phase_s)
    stop_s, _ = timed(backend.stop)
    return {"start_s": start_s, "stop_s": stop_s, "phases": phases}


def kit_lab() -> Dict[str, Any]:
    """One start and stop of a notebook's lab (network plus calibration)."""
    from labtools.lab.session import LabSession

    lab = LabSession(TOPOLOGY, results=None)
    start_s, _ = timed(lab.start)
    stop_s, _ = timed(lab.stop)
    return {"start_s": start_s, "stop_s": stop_s,
            "calibration_s": lab.machine.seconds if lab.machine else None}


def mininet_api() -> Dict[str, Any]:
    """One build+start and stop of the same topology with plain Mininet (TCLink)."""
    return plain_mininet(TOPOLOGY, shaped=True)


def mn_command() -> Dict[str, Any]:
    """One ``mn ... --test none`` (start, stop and the program's own start-up)."""
    wall_s, proc = timed(lambda: subprocess.run(MN_COMMAND, capture_output=True, text=True,
                                                timeout=900, check=False))
    if proc.returncode != 0:
        raise RuntimeError(f"mn failed: {(proc.stderr or proc.stdout)[-400:]}")
    subprocess.run(["mn", "-c"], capture_output=True, timeout=300, check=False)
    return {"wall_s": wall_s}


def profile_kit_start(top: int = 15) -> str:
    """The top functions (cumulative time) of one kit network start."""
    from labtools.lab.network import MininetBackend
    from labtools.model.catalog import load_topology

    backend = MininetBackend(load_topology(TOPOLOGY), "lxbr")
    profiler = cProfile.Profile()
    profiler.enable()
    backend.start()
    profiler.disable()
    backend.stop()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def run(repeat: int) -> Dict[str, Any]:
    """All four, ``repeat`` times each, alternating; spreads of every figure."""
    runs: Dict[str, List[Dict[str, Any]]] = {"kit_network": [], "kit_lab": [],
                                             "mininet_api": [], "mn_command": []}
    makers = {"kit_network": kit_network, "kit_lab": kit_lab, "mininet_api": mininet_api,
              "mn_command": mn_command}
    kit_network()  # warm the page cache and Python's imports: not counted
    for i in range(repeat):
        for name, fn in makers.items():
            say(f"startup {i + 1}/{repeat}: {name}")
            runs[name].append(fn())
    result: Dict[str, Any] = {"topology": TOPOLOGY, "repeat": repeat, "runs": runs}
    for name, items in runs.items():
        result[name] = {key: spread([r.get(key) for r in items])
                        for key in ("start_s", "stop_s", "wall_s", "calibration_s")
                        if any(r.get(key) is not None for r in items)}
    phases = sorted({p for r in runs["kit_network"] for p in r["phases"]})
    result["kit_network"]["phases"] = {p: spread([r["phases"].get(p) for r in runs["kit_network"]])
                                       for p in phases}
    say("startup: profiling one kit start")
    result["profile"] = profile_kit_start()
    return result


def main() -> int:
    return run_repeated(__doc__, "startup", run)


if __name__ == "__main__":
    sys.exit(main())
