"""What every benchmark shares: the machine it ran on, spreads of repeated runs, JSON out.

Benchmarks measure; they are not tests. Every figure is reported as the spread of repeated
runs (min, median, max), with the machine, kernel, emulation mode and tool versions of
the run, so numbers from different machines are never mixed up.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, TypeVar

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

T = TypeVar("T")


def spread(values: Sequence[Optional[float]], digits: int = 3) -> Dict[str, Any]:
    """``{"min", "median", "max", "n", "values"}`` of the numbers (``None``s left out)."""
    got = [float(v) for v in values if v is not None]
    if not got:
        return {"min": None, "median": None, "max": None, "n": 0, "values": []}
    return {"min": round(min(got), digits), "median": round(statistics.median(got), digits),
            "max": round(max(got), digits), "n": len(got),
            "values": [round(v, digits) for v in got]}


def fmt(s: Dict[str, Any], unit: str = "", digits: int = 2) -> str:
    """``median (min-max) unit`` of a spread, for tables."""
    if not s or s.get("median") is None:
        return "-"
    u = f" {unit}" if unit else ""
    if s["n"] == 1 or s["min"] == s["max"]:
        return f"{s['median']:.{digits}f}{u}"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f}){u}"


def timed(fn: Callable[[], T]) -> Tuple[float, T]:
    """(seconds, result) of ``fn()``."""
    start = time.monotonic()
    result = fn()
    return time.monotonic() - start, result


def _first_line(argv: Sequence[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else ""


def meminfo_mib(field: str) -> float:
    """A field of /proc/meminfo (``MemTotal``, ``MemAvailable``...) in MiB (0 without it)."""
    from labtools.system import procfs

    return procfs.meminfo_mib(field) or 0.0


def settled_available_mib(tolerance_mib: float = 2.0, tries: int = 10) -> float:
    """``MemAvailable`` (MiB) once it holds still: the page cache dropped (as root) and two
    readings 0.5 s apart within ``tolerance_mib`` (a network that was just stopped frees
    its memory for a few seconds after; without this a small network's figure can come
    out negative)."""
    last = None
    for _ in range(tries):
        subprocess.run(["sync"], check=False)
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        except OSError:
            pass  # not root: the cache stays, the readings still settle
        now = meminfo_mib("MemAvailable")
        if last is not None and abs(now - last) <= tolerance_mib:
            return now
        last = now
        time.sleep(0.5)
    return meminfo_mib("MemAvailable")


def machine_info() -> Dict[str, Any]:
    """The machine, kernel, emulation mode and versions a benchmark ran with."""
    from labtools import __version__, settings
    from labtools.system.capabilities import tool_info

    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    commit = _first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(), "cpu": cpu, "cores": os.cpu_count(),
        "memory_gib": round(meminfo_mib("MemTotal") / 1024, 1), "kernel": platform.release(),
        "emulation": settings.current().emulation.value, "python": platform.python_version(),
        "labtools": __version__, "commit": commit,
        "versions": {t: tool_info(t).version
                     for t in ("iperf3", "iperf", "ping", "mn", "qemu", "vng")},
    }


def plain_mininet(spec: str, shaped: bool) -> Dict[str, Any]:
    """Start and stop time (s) of topology ``spec`` with plain Mininet's Python API (Linux
    bridges, no controller; TCLink when ``shaped``), as a student's script would."""
    from labtools.lab.network import import_mininet, to_mininet_topo
    from labtools.model.catalog import load_topology

    import_mininet()
    from mininet.link import Link, TCLink
    from mininet.net import Mininet
    from mininet.nodelib import LinuxBridge

    topo = to_mininet_topo(load_topology(spec), "lxbr")

    def build_and_start() -> Any:  # Mininet(...) builds the network; start() brings it up
        net = Mininet(topo=topo, switch=LinuxBridge, controller=None,
                      link=TCLink if shaped else Link, autoSetMacs=True, waitConnected=False)
        net.start()
        return net

    start_s, net = timed(build_and_start)
    stop_s, _ = timed(net.stop)
    return {"start_s": start_s, "stop_s": stop_s}


def run_repeated(doc: str, name: str, run: Callable[[int], Any]) -> int:
    """The command line of a benchmark that takes ``--repeat`` and writes JSON to ``--out``
    (default ``benchmarks/results/NAME.json``)."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / f"{name}.json")
    args = parser.parse_args()
    write_json(args.out, run(args.repeat))
    return 0


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def say(text: str) -> None:
    """Progress on stderr (benchmarks run for many minutes)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)
