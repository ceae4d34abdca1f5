"""``tc -s qdisc show`` parsed (labtools.tools.tc_stats), on captures from real runs:
Mininet's TCLink shaping (HTB, netem child) in the lab VM, and every interface of a node
as the live demonstration's sampler prints them."""

from __future__ import annotations

import pytest

from labtools.errors import ParseError
from labtools.lab.live_readers import read_blocks
from labtools.model.catalog import load_topology
from labtools.model.topology import mininet_link_params
from labtools.tools.tc_stats import link_queue, parse_qdisc_stats
from tests.conftest import FIXTURES

TC = FIXTURES / "tc"
L2 = load_topology("portfolio").link("L2")


def read(name: str) -> str:
    return (TC / f"{name}.txt").read_text()


def test_an_idle_shaped_link_has_htb_at_the_root_and_netem_below_it_empty():
    root, netem = parse_qdisc_stats(read("vm_htb_netem_idle"))
    assert (root.kind, root.handle, root.parent) == ("htb", "5:", None)
    assert (netem.kind, netem.handle, netem.parent) == ("netem", "10:", "5:1")
    params = mininet_link_params(L2)
    assert netem.options == f"limit {params['max_queue_size']} delay {params['delay']}"
    assert (netem.backlog_pkts, netem.backlog_bytes, netem.sent_bytes) == (0, 0, 0)
    assert link_queue([root, netem]) is netem


def test_a_loaded_link_queues_in_netem_within_its_limit():
    stats = parse_qdisc_stats(read("vm_htb_netem_loaded"))
    queue = link_queue(stats)
    assert queue.kind == "netem" and 0 < queue.backlog_pkts <= L2.queue_pkts
    assert (queue.backlog_bytes, queue.backlog_pkts) == (47032, 32)
    assert (queue.sent_bytes, queue.sent_pkts) == (8749710, 5830)
    root = next(s for s in stats if s.parent is None)
    assert root.backlog_pkts == queue.backlog_pkts and root.overlimits == 3782


def test_a_changed_delay_shows_in_the_options_and_the_counters_carry_on():
    loaded = link_queue(parse_qdisc_stats(read("vm_htb_netem_loaded")))
    changed = link_queue(parse_qdisc_stats(read("vm_htb_netem_delay_changed")))
    assert "delay 40ms" in changed.options and changed.handle == loaded.handle
    assert changed.sent_bytes > loaded.sent_bytes  # tc qdisc replace kept the qdisc's counters
    assert changed.dropped_pkts == 10


def test_every_interface_of_a_node_is_listed_with_its_name():
    block = read_blocks((FIXTURES / "live" / "sampler_tc_r1.txt").read_text().splitlines())[0]
    stats = parse_qdisc_stats(block.tc)
    assert [s.dev for s in stats] == ["lo", "r1-eth0", "r1-eth1"]
    htb = link_queue([s for s in stats if s.dev == "r1-eth1"])
    assert htb.kind == "htb" and htb.backlog_pkts == 9 and htb.backlog_bytes == 13626


@pytest.mark.parametrize("shown, size_bytes", [("46Kb", 46 * 1024), ("2Mb", 2 * 1024 ** 2)])
def test_a_backlog_in_tc_s_units_is_counted_in_bytes(shown, size_bytes):
    # mechanically derived from the capture: tc (print_size) prints a size near a multiple
    # of 1024 as K (1024) or M (1024**2)
    text = read("vm_htb_netem_loaded").replace("backlog 47032b", f"backlog {shown}")
    assert link_queue(parse_qdisc_stats(text)).backlog_bytes == size_bytes


def test_output_without_the_counters_or_without_a_qdisc_is_refused():
    text = read("vm_htb_netem_idle")
    without = "\n".join(line for line in text.splitlines() if line.startswith("qdisc"))
    with pytest.raises(ParseError, match="line 1: a qdisc without its Sent"):
        parse_qdisc_stats(without)  # tc qdisc show without -s
    with pytest.raises(ParseError, match="no qdisc line"):
        parse_qdisc_stats(read("vm_htb_netem_idle").replace("qdisc", "class"))
    with pytest.raises(ParseError, match="not a qdisc line"):
        parse_qdisc_stats(text.replace("qdisc netem 10:", "qdisc netem ten"))
    with pytest.raises(ParseError, match="neither a netem nor a root"):
        link_queue([s for s in parse_qdisc_stats(text) if s.kind == "htb"][:0])
