"""``ss -tin``: the window a connection really had, read from real captures (the host's
kernel 6.18 with bbr, and the lab VM's 6.1 with cubic; tests/fixtures/ss/*.meta)."""

from __future__ import annotations

import re

import pytest

from labtools.errors import ParseError
from labtools.tools.parsers import parse
from tests.conftest import FIXTURES

DIR = FIXTURES / "ss"


def _asked(name: str) -> int:
    return int(re.search(r"-w (\d+)", (DIR / f"{name}.meta").read_text()).group(1))


@pytest.mark.parametrize("name", ["window_25000", "window_100000", "vm_cubic_window_100000"])
def test_the_data_connection_is_summarised_not_iperf3s_control_connection(name):
    text = (DIR / f"{name}.txt").read_text()
    p = parse("ss", text)
    assert p.summary["connections"] == 2 == len(p.table)
    data = max(re.findall(r"bytes_acked:(\d+)", text), key=int)
    row = p.table[p.table["bytes_acked"] == int(data)].iloc[0]
    assert p.summary["snd_wnd_bytes"] == row["snd_wnd_bytes"] > 0
    assert p.summary["in_flight_bytes"] == row["unacked"] * row["mss_bytes"]
    assert p.summary["rtt_ms"] == row["rtt_ms"] and p.summary["cwnd"] == row["cwnd"]
    assert 0 <= p.summary["rwnd_limited_pct"] <= 100


def test_the_window_the_kernel_grants_depends_on_the_kernel():
    """iperf3 -w W: Debian's 6.1 (tcp_adv_win_scale 1) advertises about W; the 6.18 host
    kernel (scaling_ratio) advertises more than asked, up to 1.74 x here."""
    vm = parse("ss", (DIR / "vm_cubic_window_100000.txt").read_text()).summary
    assert vm["congestion"] == "cubic"
    assert 0.95 < vm["snd_wnd_bytes"] / _asked("vm_cubic_window_100000") <= 1.0
    for name in ("window_25000", "window_100000"):
        host = parse("ss", (DIR / f"{name}.txt").read_text()).summary
        assert host["congestion"] == "bbr" and host["snd_wnd_bytes"] > _asked(name)


@pytest.mark.parametrize("text", ["", "State Recv-Q Send-Q\n", "iperf3: error\n"])
def test_no_connection_is_a_parse_error(text):
    with pytest.raises(ParseError, match="no connection line"):
        parse("ss", text)
