"""Calibrating this machine at lab start: what it adds to an emulated network, what it carries.

The lab builds a small network of its own beside the lab's (separate namespaces and links,
no connection to the lab's nodes):

    A ---- R1 ==== R2 ---- B      A-R1, R2-B: unshaped; R1=R2: CALIBRATION_DELAY_MS one way,
                                  shaped at CALIBRATION_RATE_MBPS (HTB, like the lab's links)

and measures, in a few seconds:

- the minimum RTT of a dense ping train over A-R1: what an unshaped link costs;
- the minimum RTT over R1=R2 minus twice its delay: how late a delayed link delivers;
- the goodput of one TCP transfer A -> B through both routers, which no link limits: the
  most this machine forwards before its CPU saturates (under software emulation a few tens
  of Mbit/s).

The result (:class:`~labtools.judge.machine.MachineProfile`) is kept by the session, saved
with every measurement, and used by every verdict; the last one is also written to the
cache folder, where ``labtools doctor`` shows it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence, Set

from labtools.errors import LabtoolsError
from labtools.judge.machine import MachineProfile
from labtools.model.topology import HOST, ROUTER, Link, Node, Topology
from labtools.results.records import utc_now
from labtools.tools import args as toolargs
from labtools.tools.parsers import parse
from labtools.tools.summaries import summarize

if TYPE_CHECKING:  # pragma: no cover
    from labtools.lab.session import LabSession

CALIBRATION_DELAY_MS = 5.0
CALIBRATION_RATE_MBPS = 1000.0
PING_COUNT = 30
PING_INTERVAL_S = 0.02
TCP_SECONDS = 3.0
TCP_OMIT_S = 1.0
PORT = 5399
#: where the last calibration is kept (in the cache folder)
CACHE_FILE = "machine.json"
_PREFIXES = ("cal", "kcal", "zcal")


def calibration_topology(taken: Set[str]) -> Topology:
    """The calibration network, with node names that are not in ``taken``."""
    prefix = next(p for p in _PREFIXES if not {f"{p}{i}" for i in range(1, 5)} & taken)
    a, r1, r2, b = (f"{prefix}{i}" for i in range(1, 5))
    nodes = (Node(a, HOST), Node(r1, ROUTER), Node(r2, ROUTER), Node(b, HOST))
    links = (Link(a, r1), Link(r1, r2, bw_mbps=CALIBRATION_RATE_MBPS,
                                delay_ms=CALIBRATION_DELAY_MS, name="CAL"), Link(r2, b))
    return Topology("calibration", nodes, links)


def emulation_mode() -> str:
    """``native``, ``vm-kvm`` or ``vm-tcg`` (the VM runner says which, see
    :data:`labtools.system.vm_leftovers.VM_MODE_VARIABLE`)."""
    from labtools.system.vm_leftovers import IN_VM_VARIABLE, VM_MODE_VARIABLE

    if os.environ.get(IN_VM_VARIABLE) != "1":
        return "native"
    return f"vm-{os.environ.get(VM_MODE_VARIABLE) or 'tcg'}"


def _min_rtt_ms(lab: "LabSession", src: str, dst_ip: str) -> float:
    argv = toolargs.ping_args(dst_ip, PING_COUNT, PING_INTERVAL_S)
    summary = summarize(parse("ping", lab.run(src, argv, PING_COUNT * PING_INTERVAL_S + 20)))
    low = getattr(summary, "min_ms", None)
    if low is None:
        raise LabtoolsError(f"calibration: no ping reply from {dst_ip}")
    return float(low)


def _forward_mbps(lab: "LabSession", src: str, dst: str, dst_ip: str) -> float:
    argv = toolargs.iperf3_client_args(dst_ip, TCP_SECONDS, 1, TCP_OMIT_S, port=PORT)
    with lab.server(dst, toolargs.iperf3_server_args(PORT), PORT):
        parsed = parse("iperf3", lab.run(src, argv, TCP_SECONDS + TCP_OMIT_S + 20))
    rate = summarize(parsed, TCP_OMIT_S).steady_mbps  # type: ignore[union-attr]
    if not rate:
        raise LabtoolsError("calibration: the TCP transfer reported no receiver rate")
    return float(rate)


def calibrate(lab: "LabSession", nodes: Sequence[str]) -> Optional[MachineProfile]:
    """Measure this machine on the calibration network (nodes A, R1, R2, B)."""
    from labtools.model.routing import compute_routing

    if len(nodes) != 4:
        return None
    a, r1, r2, b = nodes
    began = time.monotonic()
    topo = calibration_topology(set(lab.topo.names()))
    routing = compute_routing(topo)
    unshaped = _min_rtt_ms(lab, a, routing.target(a, r1).ip) / 2
    delayed = _min_rtt_ms(lab, r1, routing.target(r1, r2).ip) / 2 - CALIBRATION_DELAY_MS
    forward = _forward_mbps(lab, a, b, routing.target(a, b).ip)
    profile = MachineProfile(round(unshaped, 4), round(max(0.0, delayed), 4), round(forward, 2),
                             emulation_mode(), utc_now(), round(time.monotonic() - began, 2))
    remember(profile)
    return profile


def calibration_file() -> Path:
    """Where the last calibration is kept: the project's ``.cache/labtools/`` when the kit
    runs from a checkout (shared with the lab VM, so ``labtools doctor`` on the host sees
    what the VM measured), else the cache folder (``$LABTOOLS_CACHE_DIR`` wins)."""
    from labtools.paths import checkout_root
    from labtools.system.capabilities import cache_dir

    root = checkout_root()
    if os.environ.get("LABTOOLS_CACHE_DIR") or root is None:
        return cache_dir() / CACHE_FILE
    return root / ".cache" / "labtools" / CACHE_FILE


def remember(profile: MachineProfile) -> None:
    """Keep the last calibration (a read-only folder loses only that)."""
    path = calibration_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(profile.as_dict(), indent=2))
    except OSError:
        pass


def last_calibration() -> Optional[MachineProfile]:
    """The last calibration this machine made (None when there is none)."""
    try:
        return MachineProfile.from_dict(json.loads(calibration_file().read_text()))
    except (OSError, ValueError, LabtoolsError):
        return None


def calibration_lines(topo: Optional[Topology] = None) -> List[str]:
    """What the last calibration says, for ``labtools doctor`` and the notebooks: the
    machine's own cost and rate, and whether ``topo``'s rates fit (else the rate scale
    to use)."""
    from labtools.judge.policy import CAPACITY_HEADROOM
    from labtools.model.scaling import peak_load_mbps, suggested_rate_scale

    machine = last_calibration()
    if machine is None:
        return ["calibration: none yet (a lab measures this machine when it starts)"]
    lines = [f"calibration ({machine.measured_at[:16].replace('T', ' ')} UTC, "
             f"{machine.seconds:.0f} s): {machine.describe()}"]
    if topo is not None:
        load = peak_load_mbps(topo)
        factor = suggested_rate_scale(topo, machine.forward_mbps, CAPACITY_HEADROOM)
        if factor < 1.0:
            lines.append(f"  {topo.name}: its links may carry {load:.0f} Mbit/s at once, more "
                         f"than this machine forwards: run it with rate_scale={factor:g} "
                         "(LABTOOLS_RATE_SCALE=auto in the notebooks)")
        else:
            lines.append(f"  {topo.name}: its links ({load:.0f} Mbit/s at once at most) fit "
                         "what this machine forwards")
    return lines
