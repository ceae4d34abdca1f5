"""Calibrating this machine at lab start: what it adds to an emulated network, what it carries.

The lab builds a small network of its own beside the lab's (:mod:`labtools.model.calibration`:
separate namespaces and links, no connection to the lab's nodes):

    A ---- R1 ==== R2 ---- B      A-R1, R2-B: unshaped; R1=R2: CALIBRATION_DELAY_MS one way,
                                  shaped at CALIBRATION_RATE_MBPS (HTB, like the lab's links)

and :func:`calibrate` measures, in a few seconds, through what the session hands it (a
:class:`~labtools.lab.base.HostRunner`: it runs tools on the network's nodes):

- the minimum RTT of a dense ping train over A-R1: what an unshaped link costs;
- the minimum RTT over R1=R2 minus twice its delay: how late a delayed link delivers;
- the goodput of one TCP transfer A -> B through both routers, which no link limits: the
  most this machine forwards before its CPU saturates (under software emulation a few tens
  of Mbit/s).

The result (:class:`~labtools.judge.machine.MachineProfile`) is kept by the session, saved
with every measurement, and used by every verdict; the session also keeps the last one in
the cache folder (:func:`remember`), where ``labtools doctor`` shows it
(:func:`calibration_lines`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List, Optional

from labtools import settings
from labtools.errors import LabtoolsError
from labtools.judge.machine import MachineProfile
from labtools.lab.base import HostRunner
from labtools.lab.processes import parse_output
from labtools.model.calibration import CalibrationNetwork
from labtools.model.topology import Topology
from labtools.results.records import utc_now
from labtools.tools import args as toolargs
from labtools.tools.summaries import RateSummary, RttSummary, require_kind, summarize

PING_COUNT = 30
PING_INTERVAL_S = 0.02
TCP_SECONDS = 3.0
TCP_OMIT_S = 1.0
PORT = 5399
#: where the last calibration is kept (in the cache folder)
CACHE_FILE = "machine.json"


def _min_rtt_ms(runner: HostRunner, src: str, dst_ip: str) -> float:
    argv = toolargs.ping_args(dst_ip, PING_COUNT, PING_INTERVAL_S)
    output = runner.run(src, argv, PING_COUNT * PING_INTERVAL_S + 20)
    low = require_kind(summarize(parse_output("ping", src, output)), RttSummary).min_ms
    if low is None:
        raise LabtoolsError(f"calibration: no ping reply from {dst_ip}")
    return float(low)


def _forward_mbps(runner: HostRunner, src: str, dst: str, dst_ip: str) -> float:
    options = toolargs.Iperf3Options(dst_ip, duration_s=TCP_SECONDS, omit_s=TCP_OMIT_S,
                                     port=PORT)
    with runner.server(dst, options.server_argv(), PORT):
        output = runner.run(src, options.argv(), TCP_SECONDS + TCP_OMIT_S + 20)
    summary = summarize(parse_output("iperf3", src, output), TCP_OMIT_S)
    rate = require_kind(summary, RateSummary).steady_mbps
    if not rate:
        raise LabtoolsError("calibration: the TCP transfer reported no receiver rate")
    return float(rate)


def calibrate(runner: HostRunner, net: CalibrationNetwork) -> MachineProfile:
    """Measure this machine on the calibration network ``net``, running the tools through
    ``runner`` (the lab session that built ``net``)."""
    a, r1, r2, b = net.nodes
    began = time.monotonic()
    unshaped = _min_rtt_ms(runner, a, net.address(a, r1)) / 2
    delayed = (_min_rtt_ms(runner, r1, net.address(r1, r2)) / 2 - net.delay_ms
               if net.delay_ms > 0 else 0.0)  # no delayed link: no lateness to measure
    forward = _forward_mbps(runner, a, b, net.address(a, b))
    return MachineProfile(round(unshaped, 4), round(max(0.0, delayed), 4), round(forward, 2),
                          settings.current().emulation.value, utc_now(),
                          round(time.monotonic() - began, 2))


def calibration_file() -> Path:
    """Where the last calibration is kept: the project's ``.cache/labtools/`` when the kit
    runs from a checkout (shared with the lab VM, so ``labtools doctor`` on the host sees
    what the VM measured), else the cache folder (``$LABTOOLS_CACHE_DIR`` wins)."""
    from labtools.paths import checkout_root
    from labtools.system.capabilities import cache_dir

    root = checkout_root()
    if settings.current().cache_dir_chosen or root is None:
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
