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


# window_25000's data connection (lines 4 and 5) with one printed value changed: a value
# out of its range is refused naming the line and the field, never read as a number
OUT_OF_RANGE = [
    ("cwnd:132", "cwnd:0", "line 5: cwnd is 0: zero, which ss never prints"),
    ("mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:132",
     "mss:0 pmtu:1500 rcvmss:536 advmss:1448 cwnd:132", "line 5: mss is 0: zero"),
    ("cwnd:132", "cwnd:1.5", "line 5: cwnd is 1.5: not a whole number"),
    ("unacked:28", "unacked:-28", "line 5: unacked is -28: out of range"),
    ("bytes_acked:5303174", "bytes_acked:" + "9" * 30, "bytes_acked is 9999"),
    ("rwnd_limited:1348ms(57.7%)", "rwnd_limited:1348ms(157.7%)",
     "line 5: rwnd_limited is 157.7%: a share over 100 %"),
    ("sndbuf_limited:612ms(26.2%)", "sndbuf_limited:612ms(46.2%)",
     "rwnd_limited + sndbuf_limited is 103.9%: shares of the busy time over 100 %"),
    ("rwnd_limited:1348ms(57.7%)", "rwnd_limited:1348ms(-5%)", "rwnd_limited is -5"),
    ("rtt:18.378/7.207", "rtt:-18.378/7.207", "line 5: rtt is -18.378: not a finite"),
    ("rtt:18.378/7.207", "rtt:nan/7.207", "line 5: rtt is nan: not a finite"),
    ("rtt:18.378/7.207", "rtt:1.2.3/7.207", "line 5: rtt is 1.2.3: not a number"),
    ("rtt:18.378/7.207", "rtt:18.378/-1", "line 5: rttvar is -1"),
    ("minrtt:0.018", "minrtt:0", "line 5: minrtt is 0: zero"),
    ("delivery_rate 16395544bps", "delivery_rate -16395544bps", "delivery_rate is -1639"),
    ("40544      10.77.1.1:46414", "9" * 25 + " 10.77.1.1:46414", "line 4: send_q_bytes is 9999"),
]


@pytest.mark.parametrize("old, new, message", OUT_OF_RANGE,
                         ids=[new[:24] for _, new, _ in OUT_OF_RANGE])
def test_a_value_out_of_range_is_refused_naming_the_field(old, new, message):
    text = (DIR / "window_25000.txt").read_text()
    assert text.count(old) == 1
    with pytest.raises(ParseError) as err:
        parse("ss", text.replace(old, new))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_real_shares_and_windows_are_in_range():
    for name in ("window_25000", "window_100000", "vm_cubic_window_100000"):
        for row in parse("ss", (DIR / f"{name}.txt").read_text()).rows.records:
            shares = [row[c] or 0 for c in ("rwnd_limited_pct", "sndbuf_limited_pct")]
            assert all(0 <= s <= 100 for s in shares) and sum(shares) <= 100.1
            assert row["cwnd"] > 0 and row["mss_bytes"] > 0 and row["rtt_ms"] > 0
