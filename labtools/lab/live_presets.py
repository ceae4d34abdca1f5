"""The live demonstration's presets: five stories of under a minute on the reference
network (``portfolio``: h1 -> h4 crosses L1 40 Mbit/s 10 ms and L2 30 Mbit/s 20 ms, whose
queue is the bottleneck's; h2 -> h5 shares L1 and L2).

Each is a registry entry (:data:`PRESETS`): its flows, its timed knob changes, a line the
instructor reads out, and one line per change. The numbers the audience should see come
from the kit's calculator while the demonstration runs
(:func:`labtools.lab.live_plan.expectations`), never from here.
"""

from __future__ import annotations

from typing import Dict

from labtools.errors import InputError
from labtools.lab.live_plan import FlowSpec, KnobChange, Preset

#: the reference network the presets run on
TOPOLOGY = "portfolio"


def _change(at_s: float, link: str, **values: float) -> KnobChange:
    return KnobChange(link, tuple(values.items()), at_s)


PRESETS: Dict[str, Preset] = {p.name: p for p in (
    Preset(
        name="bufferbloat", topology=TOPOLOGY,
        flows=(FlowSpec("tcp", "h1", "h4"), FlowSpec("ping", "h1", "h4")),
        changes=(_change(0, "L2", queue_pkts=1000), _change(25, "L2", queue_pkts=60)),
        look_at="A big queue on L2 fills: the backlog climbs to hundreds of packets and the "
                "ping's RTT climbs far above the empty path's, while the rate stays at the "
                "ceiling. At 25 s the queue shrinks to 60 packets: the RTT falls, the rate "
                "holds.",
        change_notes=("L2 holds up to 1000 packets: watch the backlog and the RTT climb",
                      "L2 holds 60 packets: the RTT falls to the expected maximum, the rate "
                      "stays"),
        duration_s=45),
    Preset(
        name="bdp", topology=TOPOLOGY,
        flows=(FlowSpec("tcp", "h1", "h4", window_bytes=100_000),
               FlowSpec("ping", "h1", "h4")),
        changes=(_change(0, "L2", delay_ms=2), _change(15, "L2", delay_ms=20),
                 _change(30, "L2", delay_ms=40)),
        look_at="One flow with a 100 kB window. While the window is above the path's "
                "bandwidth-delay product the rate sits at the ceiling; as L2's delay grows "
                "the BDP passes the window and the rate falls to window / RTT.",
        change_notes=("L2 2 ms: the BDP is below the window, the rate is at the ceiling",
                      "L2 20 ms: the BDP is above the window, rate = window / RTT",
                      "L2 40 ms: the RTT doubles again, the rate falls with it"),
        duration_s=45),
    Preset(
        name="fairness", topology=TOPOLOGY,
        flows=(FlowSpec("tcp", "h1", "h4"), FlowSpec("tcp", "h2", "h5", start_s=15),
               FlowSpec("ping", "h3", "h6")),
        changes=(_change(30, "L2", bw_mbps=20),),
        look_at="One flow has L2 to itself; at 15 s a second flow joins and both settle "
                "near half of L2 each (Jain's index near 1). At 30 s L2 slows to 20 Mbit/s: "
                "both shares fall together.",
        change_notes=("L2 slows to 20 Mbit/s: each fair share falls to half of it",),
        duration_s=45),
    Preset(
        name="loss", topology=TOPOLOGY,
        flows=(FlowSpec("tcp", "h1", "h4"), FlowSpec("ping", "h1", "h4")),
        changes=(_change(10, "L2", loss_pct=1), _change(25, "L2", loss_pct=0.1),
                 _change(40, "L2", loss_pct=0)),
        look_at="Random loss on L2: the rate falls towards Mathis' estimate MSS / RTT x "
                "1.22 / sqrt(p) (Reno's); CUBIC, Linux's default, often does better. The "
                "queue empties: a lossy link is not a full one.",
        change_notes=("1 % loss: compare the rate with Mathis' estimate",
                      "0.1 % loss: the estimate rises by sqrt(10)",
                      "no loss: the rate climbs back to the ceiling"),
        duration_s=50),
    Preset(
        name="udp-knee", topology=TOPOLOGY,
        flows=(FlowSpec("udp", "h1", "h4", rate_mbps=20), FlowSpec("ping", "h1", "h4")),
        changes=(_change(10, "L2", bw_mbps=15), _change(25, "L2", bw_mbps=25)),
        look_at="UDP offered at 20 Mbit/s. While L2 carries more, what arrives is what is "
                "offered and the queue is empty; at 10 s L2 drops to 15 Mbit/s, below the "
                "offer: the knee. The queue sits full, the RTT at its maximum, the excess is "
                "dropped. At 25 s L2 rises to 25 Mbit/s and all of it gets through again.",
        change_notes=("L2 below the offered rate: queue full, drops, RTT at its maximum",
                      "L2 above the offered rate: no drops, the queue empties"),
        duration_s=40),
)}


def preset(name: str) -> Preset:
    """The preset called ``name``; :class:`InputError` naming the presets otherwise."""
    if name not in PRESETS:
        raise InputError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
    return PRESETS[name]
