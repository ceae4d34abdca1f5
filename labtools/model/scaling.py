"""Running a lab with every link rate scaled by one factor, for machines too slow for it.

Under software emulation a whole emulated network forwards only a few tens to hundreds of
Mbit/s before the CPU, not the links, sets the rate. A lab whose links are faster than the
machine can carry measures the machine. ``portfolio,rate_scale=0.5`` is the same topology
with every shaped link at half its rate; delays, queues and loss are unchanged, and every
expected value, share and window is computed from the scaled topology, so it follows.

The factor is given by the user (``rate_scale=`` in a topology spec, or
``LABTOOLS_RATE_SCALE`` for the notebooks) or suggested from the machine's calibration
(:func:`suggested_rate_scale`); the topology keeps it in ``params["rate_scale"]`` and
:func:`rate_note` is the sentence shown wherever rates appear. A topology scaled already
(a ``.json`` file saved from a scaled lab keeps its factor) is not scaled a second time: a
factor given for it must be its own (:func:`scale_rates`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from labtools.errors import TopologyError
from labtools.model.limits import MIN_RATE_MBPS, name_of, show
from labtools.model.topology import Topology

#: the parameter of a topology spec that scales the rates
PARAMETER = "rate_scale"
#: the smallest factor the kit accepts (below it, rates become too small to teach with)
MIN_SCALE = 0.05
#: suggested factors are rounded down to a multiple of this
SCALE_STEP = 0.05


def check_scale(factor: object, where: str = "") -> float:
    """``factor`` as a float within :data:`MIN_SCALE`..1; :class:`TopologyError` otherwise.

    A number only: ``True`` and text (``"0.5"`` too: a value that only reads as a number is
    text) are refused, and so are NaN and infinity. ``where`` starts the message
    (``"topology params"``)."""
    lead = f"{where}: " if where else ""
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise TopologyError(f"{lead}{PARAMETER}={show(factor, 30)} must be a number within "
                            f"{MIN_SCALE:g}..1, not {_kind(factor)}")
    try:
        value = float(factor)
    except OverflowError:  # an integer of hundreds of digits
        raise TopologyError(f"{lead}{PARAMETER}={show(factor, 30)}: the number is too large "
                            f"(it lies in {MIN_SCALE:g}..1)") from None
    if not MIN_SCALE <= value <= 1.0:  # NaN too
        raise TopologyError(f"{lead}{PARAMETER}={show(factor, 30)} is outside {MIN_SCALE:g}..1 "
                            "(it only slows a lab down, to what the machine can carry)")
    return value


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "none"
    return "text" if isinstance(value, str) else type(value).__name__


def scale_rates(topo: Topology, factor: object) -> Topology:
    """``topo`` with every shaped link's rate times ``factor`` (delays, queues unchanged).

    A topology whose rates are scaled already (``params["rate_scale"]`` below 1, e.g. a
    ``.json`` file saved from a scaled lab) is not scaled again: ``factor`` must then be
    that same factor (what a results file records; the topology is returned as it is), any
    other is refused, so the rates are never scaled twice under a note that says once."""
    value = check_scale(factor)
    already = rate_scale(topo)
    if already != 1.0:
        if value == already:
            return topo
        raise TopologyError(f"topology {name_of(topo.name)} has its rates scaled by {already:g} "
                            f"already (its params {PARAMETER}): {PARAMETER}={value:g} would scale "
                            f"them again; leave {PARAMETER} out, or change it in the file")
    if value == 1.0:
        return topo
    links = tuple(replace(lk, bw_mbps=None if lk.bw_mbps is None else round(lk.bw_mbps * value, 6))
                  for lk in topo.links)
    for before, after in zip(topo.links, links):
        if after.bw_mbps is not None and after.bw_mbps < MIN_RATE_MBPS:
            raise TopologyError(f"{PARAMETER}={value:g} would slow link {before.label} from "
                                f"{before.bw_mbps:g} to {after.bw_mbps:g} Mbit/s, below the "
                                f"{MIN_RATE_MBPS:g} Mbit/s the kit shapes")
    return Topology(topo.name, topo.nodes, links, {**dict(topo.params), PARAMETER: value})


def rate_scale(topo: Topology) -> float:
    """The factor ``topo``'s rates were scaled by (1.0 when they were not)."""
    return check_scale(topo.params.get(PARAMETER, 1.0), f"topology {name_of(topo.name)}")


def rate_note(topo: Topology) -> str:
    """The sentence shown wherever rates appear; empty when the rates are not scaled."""
    factor = rate_scale(topo)
    if factor == 1.0:
        return ""
    return (f"link rates scaled by {factor:g} for this machine (delays and queues unchanged; "
            "every expected value follows)")


def peak_load_mbps(topo: Topology) -> float:
    """An upper bound of what a lab on ``topo`` makes the machine forward at once (Mbit/s):
    every shaped link busy in one direction."""
    return sum(lk.bw_mbps for lk in topo.links if lk.bw_mbps is not None)


def suggested_rate_scale(topo: Topology, machine_mbps: Optional[float],
                         headroom: float) -> float:
    """The largest factor (a multiple of :data:`SCALE_STEP`, at most 1) at which the lab's
    peak load stays within ``headroom`` x what the machine forwards (``machine_mbps``,
    from the calibration). 1.0 when the machine is unknown or fast enough."""
    load = peak_load_mbps(topo)
    if machine_mbps is None or machine_mbps <= 0 or load <= 0:
        return 1.0
    fits = headroom * machine_mbps / load
    if fits >= 1.0:
        return 1.0
    steps = int(fits / SCALE_STEP + 1e-9)
    return max(MIN_SCALE, steps * SCALE_STEP)
