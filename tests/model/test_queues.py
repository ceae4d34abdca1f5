"""The queue model: the RTT a ping sees while one TCP flow fills a shaped link's queue.

Hand calculations on the kit's topologies; the model itself was measured in the lab VM
(labtools/model/queues.py) and is checked on real networks by tests/lab/test_network.py.
"""

from __future__ import annotations

import pytest

from labtools.errors import InputError
from labtools.model.catalog import load_topology
from labtools.model.queues import CUBIC_BETA, directed_links, loaded_rtt, queue_frames_after_cut
from labtools.model.topology import Link

FRAME_BITS = 1514 * 8


def test_cubic_cuts_its_window_to_717_of_1024():
    assert CUBIC_BETA == pytest.approx(0.7002, abs=1e-4)


def test_a_dumbbell_under_its_own_kind_of_load():
    """5 Mbit/s, 23 ms, 105 packets; ping a1->b1 while a2->b2 fills B's queue. Full: the
    ping spends max(23, 105 x 1514 B / 5 Mbit/s = 254.4) ms on B, 23 ms back: 277.4 ms.
    The load's rest of the path is 23 ms = 9.49 frames; after a cut the queue keeps
    0.7002 x (105 + 9.49) - 9.49 = 70.7 frames: 171.2 + 23 = 194.2 ms. Measured in the lab
    VM: 189-270 ms, median 242 ms (the model's typical: 235.8 ms)."""
    topo = load_topology("dumbbell,pairs=2,bw_mbps=5,delay_ms=23,queue_pkts=105")
    r = loaded_rtt(topo, "a1", "b1", "a2", "b2")
    full = 105 * FRAME_BITS / 5e6 * 1e3
    rest = 5e6 * 0.023 / FRAME_BITS
    low_frames = CUBIC_BETA * (105 + rest) - rest
    assert r.queue_link == "B" and r.idle_ms == 46
    assert r.high_ms == pytest.approx(full + 23)
    assert r.queue_frames_low == pytest.approx(low_frames)
    assert r.low_ms == pytest.approx(low_frames * FRAME_BITS / 5e6 * 1e3 + 23)
    assert r.typical_ms == pytest.approx((r.low_ms + r.high_ms) / 2)
    assert abs(r.typical_ms - 242) / 242 < 0.10  # the lab VM's median


def test_the_reference_path_under_its_own_load():
    """h1 -> h4 with h1 -> h4 loading it: L2 (30 Mbit/s, 20 ms, 100) is the bottleneck.
    Full: max(20, 40.37) - 20 = 20.37 ms more than 60. The rest of the path is 40 ms = 99.1
    frames; a cut leaves 0.7002 x 199.1 - 99.1 = 40.3 frames, drained in 16.3 ms < 20 ms: the
    queue is all delay then, and the RTT falls back to the propagation's 60 ms."""
    r = loaded_rtt(load_topology("portfolio"), "h1", "h4")
    assert r.queue_link == "L2" and (r.load_src, r.load_dst) == ("h1", "h4")
    assert r.high_ms == pytest.approx(60 + 100 * FRAME_BITS / 30e6 * 1e3 - 20)
    assert r.low_ms == pytest.approx(60)
    # the replies' direction: h4's pings while h1 -> h4 loads cross L2's queue on the way back
    assert loaded_rtt(load_topology("portfolio"), "h4", "h1", "h1", "h4").high_ms == r.high_ms


@pytest.mark.parametrize("load, crosses", [
    (("h2", "h5"), "L2"),   # scenario A of the multiplexing lab: the same bottleneck
    (("h7", "h9"), None),   # L3's queue (r3 -> r4): not on h1 -> h4's way
    (("h8", "h9"), None),   # scenario D: no shared link at all
    (("h4", "h1"), "L2"),   # h4 -> h1's queue builds at r3: the replies wait in it
])
def test_a_ping_waits_where_its_echo_or_its_reply_crosses_the_loads_queue(load, crosses):
    r = loaded_rtt(load_topology("portfolio"), "h1", "h4", *load)
    assert r.queue_link == crosses
    if crosses is None:
        assert r.low_ms == r.typical_ms == r.high_ms == r.idle_ms == 60


def test_a_queue_shorter_than_its_delay_never_adds_waiting():
    """10 packets on a 10 Mbit/s, 50 ms link: netem's limit caps the rate before a queue
    can wait (10 x 1514 B per 50 ms = 2.4 Mbit/s)."""
    topo = load_topology("dumbbell,pairs=1,bw_mbps=10,delay_ms=50,queue_pkts=10")
    r = loaded_rtt(topo, "a1", "b1")
    assert r.queue_link is None and r.high_ms == r.idle_ms == 100


def test_directed_links_name_the_side_a_packet_leaves():
    assert directed_links(load_topology("portfolio"), "h1", "h4")[2:4] == [
        ("L1", "r1"), ("L2", "r2")]


def test_a_link_without_a_queue_has_no_cut():
    with pytest.raises(InputError, match="no rate or no queue limit"):
        queue_frames_after_cut(Link("a", "b", bw_mbps=10), 10)
