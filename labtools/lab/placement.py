"""Where a lab runs: natively on this machine, or in the lab VM. One decision for every
entry point (:class:`~labtools.lab.session.LabSession`, ``labtools run``, ``labtools
notebooks execute``, ``labtools vm --if-needed`` under ``make lab`` and ``make test``, the
benchmarks).

A lab runs natively when this machine has Mininet and (for Linux bridges) ``brctl``, lets
this user make a lab's sandbox, and, only when a link has a delay, a loss rate or a queue
limit, when the kernel has netem. A delay-free lab (``star,hosts=3,bw_mbps=50``) therefore
starts natively on a kernel without netem, as a notebook's ``LabSession`` starts it; the
course's labs all have delays, so a lab not named (``topo=None``) needs netem.
"""

from __future__ import annotations

import os
from typing import Optional

from labtools.model.topology import Topology, needs_netem


def kernel_problem(needs_delay_or_loss: bool, switch: str = "lxbr") -> Optional[str]:
    """Why this kernel and user cannot run a lab's links and switches, or None: Open
    vSwitch without root, or links that need netem on a kernel without it."""
    from labtools.lab.network import OVS_NEEDS_ROOT
    from labtools.system.capabilities import kernel_has_netem

    if switch != "lxbr" and os.geteuid() != 0:
        return OVS_NEEDS_ROOT
    if needs_delay_or_loss:
        ok, detail = kernel_has_netem()
        if not ok:
            return (f"this lab's links need netem (delay, loss or a queue limit) and {detail}: "
                    "run inside the lab VM, e.g. `labtools vm -- labtools run portfolio link`")
    return None


def native_lab_problem(topo: Optional[Topology] = None, switch: str = "lxbr") -> Optional[str]:
    """Why this machine cannot run the lab of ``topo`` natively (one line), or None when it
    can. ``topo=None``: a lab of the course (its links have delays)."""
    from labtools.system.capabilities import find_tool, mininet_available
    from labtools.system.userns import sandbox_ok

    ok, detail = mininet_available()
    if not ok:
        return f"Mininet is not usable here: {detail}"
    if switch == "lxbr" and find_tool("brctl") is None:
        return "brctl (bridge-utils) is not installed"
    problem = kernel_problem(topo is None or needs_netem(topo), switch)
    if problem is not None:
        return problem
    ok, detail, _ = sandbox_ok()
    return None if ok else f"this user cannot make a lab's sandbox here: {detail}"


def runs_natively(topo: Optional[Topology] = None, switch: str = "lxbr") -> bool:
    """Whether the lab of ``topo`` starts on this machine without the VM (inside the lab
    VM, always)."""
    from labtools import settings

    return settings.current().in_vm or native_lab_problem(topo, switch) is None
