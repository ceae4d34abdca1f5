"""Plots drawn from REAL captured tool output (tests/fixtures, see each .meta / README).

The ping, iperf3 and iperf fixtures come from a three-namespace network (cli -- rtr -- srv,
HTB shaping each way in the router, no added delay; scripts/capture_fixtures.sh); the
tests model it as a topology with the rate and queue read from the fixtures' .meta files.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from labtools.errors import InputError  # noqa: E402
from labtools.judge import policy  # noqa: E402
from labtools.judge.capacity import CAPACITY_COLUMNS, is_saturated  # noqa: E402
from labtools.judge.measurement import JudgeContext, judge_output, judge_parsed  # noqa: E402
from labtools.judge.shares import judge_flows  # noqa: E402
from labtools.judge.verdicts import flag_rtt_outliers  # noqa: E402
from labtools.model import expect  # noqa: E402
from labtools.model.fairness import Flow  # noqa: E402
from labtools.model.topology import ROUTER, Link, Node, Topology  # noqa: E402
from labtools.teach import pitfall_plots, plots, topology_plot  # noqa: E402
from labtools.tools.parsers import parse  # noqa: E402
from tests.conftest import FIXTURES  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def fixture(tool_dir: str, name: str) -> str:
    return (FIXTURES / tool_dir / name).read_text()


def parsed(tool: str, tool_dir: str, name: str):
    return parse(tool, fixture(tool_dir, name))


@pytest.fixture(scope="module")
def capture_topo() -> Topology:
    """The capture network as a topology: cli -- rtr -- srv, both links shaped."""
    network = re.search(r"^network: .*HTB (\d+)mbit each way in rtr \(pfifo (\d+)\)",
                        fixture("iperf3", "tcp_p3.meta"), re.MULTILINE)
    assert network, "the fixtures' .meta must describe the capture network"
    rate, queue = float(network.group(1)), int(network.group(2))
    return Topology("capture", (Node("cli"), Node("rtr", ROUTER), Node("srv")),
                    (Link("cli", "rtr", bw_mbps=rate, queue_pkts=queue),
                     Link("rtr", "srv", bw_mbps=rate, queue_pkts=queue)))


def lines_by_label(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


# --- intervals ----------------------------------------------------------------------------
def test_intervals_iperf3_sender_overshoots_receiver_does_not(capture_topo, tmp_path):
    run = parsed("iperf3", "iperf3", "tcp_server_output.json")
    link = expect.bottleneck(capture_topo, "cli", "srv")[0]
    ceiling = expect.tcp_goodput_ceiling_mbps(link)
    ax = plots.plot_intervals(run.table, link_mbps=link, ceiling_mbps=ceiling)
    lines = lines_by_label(ax)
    sender = lines[plots.SIDE_STYLE["sender"]["label"]]
    receiver = lines[plots.SIDE_STYLE["receiver"]["label"]]
    sums = run.table[run.table["stream"] == -1]
    want = sums[sums["side"] == "sender"]["rate_mbps"].tolist()
    assert list(sender.get_ydata())[:len(want)] == pytest.approx(want)
    # the real capture shows the pitfall: the sender's first second is above the link
    assert max(sender.get_ydata()) > link > max(receiver.get_ydata())
    assert lines[f"link rate {link:g} Mbit/s"].get_ydata()[0] == link
    assert any(lb.startswith("TCP goodput ceiling 19.1") for lb in lines)
    low, high = ax.get_ylim()
    assert low == 0 and high > max(sender.get_ydata()) > link
    assert "(s)" in ax.get_xlabel() and "(Mbit/s)" in ax.get_ylabel()
    # the sender's intervals above the link are marked (no wire carries that rate)
    over = sums[(sums["side"] == "sender") & (sums["rate_mbps"] > link * policy.RATE_MAX)]
    marks = lines[f"sender above the link rate ({len(over)})"]
    assert list(marks.get_ydata()) == pytest.approx(over["rate_mbps"].tolist())
    assert len(legend_texts(ax)) == 5
    ax.figure.savefig(tmp_path / "intervals.png")


def test_intervals_iperf3_omitted_seconds_are_shaded_first():
    run = parsed("iperf3", "iperf3", "tcp_omit.json")
    ax = plots.plot_intervals(run.table)
    spans = [p for p in ax.patches if p.get_label().startswith("warm-up")]
    assert len(spans) == 1
    omitted_end = run.table[run.table["omitted"]]["end_s"].max()
    sender = lines_by_label(ax)[plots.SIDE_STYLE["sender"]["label"]]
    xs = list(sender.get_xdata())
    assert xs == sorted(xs) and xs[1] == pytest.approx(omitted_end, abs=1e-3)
    assert any("no receiver intervals" in t.get_text() for t in ax.texts)


def test_intervals_simpleperf_adds_connections_per_interval():
    run = parsed("simpleperf", "simpleperf", "client_t2_i0.5_P2.jsonl")
    fig, given = plt.subplots()
    ax = plots.plot_intervals(run.table, warmup_s=1.0, ax=given)
    assert ax is given
    receiver = lines_by_label(ax)[plots.SIDE_STYLE["receiver"]["label"]]
    rows = run.table[run.table["side"] == "receiver"]
    first = rows.groupby("conn")["rate_mbps"].first().sum()
    assert receiver.get_ydata()[0] == pytest.approx(first)
    # two connections over 2 s in 0.5 s steps: 4 intervals (the final ms sliver is left out)
    assert len(receiver.get_ydata()) == 5  # 4 steps + the closing point
    assert [p.get_label() for p in ax.patches] == ["warm-up, first 1 s (not counted)"]


def test_intervals_need_interval_rows():
    run = parsed("simpleperf", "simpleperf", "client_n10MB_P3.jsonl")
    assert run.table.empty  # captured without -i
    with pytest.raises(InputError, match="interval"):
        plots.plot_intervals(run.table)
    with pytest.raises(InputError, match="side"):
        plots.plot_intervals(pd.DataFrame({"rate_mbps": [1.0]}))


# --- RTTs -----------------------------------------------------------------------------------
def test_rtts_mark_the_outliers_flag_rtt_outliers_finds():
    run = parsed("ping", "ping", "partial_loss.txt")
    flagged = flag_rtt_outliers(run.table)
    assert flagged["outlier"].sum() > 0  # the capture overloads a 1 Mbit/s queue
    ax = plots.plot_rtts(run.table, expected_ms=0.0)
    lines = lines_by_label(ax)
    marked = lines[f"outliers ({int(flagged['outlier'].sum())})"]
    assert list(marked.get_xdata()) == flagged[flagged["outlier"]]["seq"].tolist()
    assert list(marked.get_ydata()) == pytest.approx(flagged[flagged["outlier"]]["rtt_ms"].tolist())
    seqs = set(run.table["seq"])
    lost = sorted(set(range(min(seqs), max(seqs) + 1)) - seqs)
    assert list(lines[f"no reply ({len(lost)})"].get_xdata()) == lost
    low = run.table["rtt_ms"].min()
    assert lines[f"minimum {low:.3g} ms"].get_ydata()[0] == pytest.approx(low)
    assert lines[f"average {run.table['rtt_ms'].mean():.3g} ms"]
    assert "expected 0 ms (2 × delays)" in lines
    assert ax.get_ylim()[1] >= run.table["rtt_ms"].max()
    assert "(ms)" in ax.get_ylabel()


def test_rtts_without_outliers(capture_topo):
    run = parsed("ping", "ping", "normal.txt")
    assert not flag_rtt_outliers(run.table)["outlier"].any()
    expected = expect.rtt_ms(capture_topo, "cli", "srv")
    ax = plots.plot_rtts(run.table, expected_ms=expected)
    labels = list(lines_by_label(ax))
    assert not any(lb.startswith("outliers") or lb.startswith("no reply") for lb in labels)
    assert any(lb.startswith("outlier threshold") and lb.endswith("(off scale)") for lb in labels)
    samples = lines_by_label(ax)["RTT samples"]
    assert list(samples.get_xdata()) == run.table["seq"].tolist()


# --- expected vs measured ------------------------------------------------------------------
def _bar_colours(ax):
    return [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0]


def verdicts_for(run, topo, src, dst):
    return judge_parsed(run, topo, src, dst).verdicts_table


def test_expected_vs_measured_colours_follow_the_verdicts(capture_topo):
    run = parsed("iperf3", "iperf3", "tcp_p3.json")
    table = verdicts_for(run, capture_topo, "cli", "srv")
    assert table["verdict"].tolist() == ["ok", "invalid"]  # the sender claims too much
    ax = plots.plot_expected_vs_measured(table)
    bars = _bar_colours(ax)
    assert len(bars) == 4  # expected + measured per row
    measured = [b for b in bars if b.get_hatch() is None]
    want = [matplotlib.colors.to_rgba(plots.VERDICT_COLOURS[v]) for v in table["verdict"][::-1]]
    assert sorted(b.get_facecolor() for b in measured) == sorted(want)
    assert ax.get_xlabel() == "value (Mbit/s)"
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        f"{m} (Mbit/s)" for m in table["metric"][::-1]]


def test_expected_vs_measured_mixed_units_in_percent(capture_topo):
    ping = verdicts_for(parsed("ping", "ping", "normal.txt"), capture_topo, "cli", "srv")
    tcp = verdicts_for(parsed("iperf3", "iperf3", "tcp_p1.json"), capture_topo, "cli", "srv")
    table = pd.concat([ping, tcp], ignore_index=True)
    ax = plots.plot_expected_vs_measured(table)
    assert ax.get_xlabel() == "% of expected"
    # the ping row expects 0 ms (no delay in the capture network): no percentage bar
    assert any("no expected value" in t.get_text() for t in ax.texts)
    expected_bars = [b for b in _bar_colours(ax) if b.get_hatch() == "//"]
    comparable = int((table["expected"].fillna(0) != 0).sum())  # rtt_avg, rtt_max, the rates
    assert comparable == len(tcp) + 2
    assert [b.get_width() for b in expected_bars] == pytest.approx([100.0] * comparable)


# --- shares ------------------------------------------------------------------------------------
def test_shares_against_the_fair_share(capture_topo):
    run = parsed("iperf3", "iperf3", "tcp_p3.json")  # three connections at once on the link
    flows = [Flow("cli", "srv", 3)]
    result = judge_flows(capture_topo, flows, [run], JudgeContext())
    ax = plots.plot_shares(result.table)
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert [b.get_height() for b in bars] == pytest.approx([run.summary["receiver_mbps"]])
    share = {c.get_label(): c for c in ax.collections}
    link = expect.bottleneck(capture_topo, "cli", "srv")[0]
    assert share["fair share (link rate)"].get_segments()[0][0][1] == pytest.approx(link)
    assert share["fair share × 1448/1514 (TCP goodput)"].get_segments()[0][0][1] == \
        pytest.approx(expect.tcp_goodput_ceiling_mbps(link))
    claim = lines_by_label(ax)["sender's claim"]
    assert claim.get_ydata()[0] == pytest.approx(run.summary["sender_mbps"])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cli-srv\n×3 conn."]
    assert "(Mbit/s)" in ax.get_ylabel()


# --- UDP sweep -----------------------------------------------------------------------------------
def udp_sweep_table() -> pd.DataFrame:
    """Real iperf3 UDP runs at three offered rates on the same shaped network."""
    rows = []
    for name in ("udp_reverse.json", "udp_p2.json", "udp_p1.json"):
        s = parsed("iperf3", "iperf3", name).summary
        row = {"step": len(rows) + 1, "phase": "ramp", "offered_mbps": s["sender_mbps"],
               "received_mbps": s["receiver_mbps"], "loss_pct": s["lost_pct"],
               "jitter_ms": s["jitter_ms"]}
        row["saturated"] = is_saturated(row["offered_mbps"], row["received_mbps"],
                                        row["loss_pct"])
        rows.append(row)
    return pd.DataFrame(rows, columns=CAPACITY_COLUMNS)


def test_udp_sweep(capture_topo):
    table = udp_sweep_table()
    assert table["saturated"].tolist() == [False, False, True]
    link = expect.bottleneck(capture_topo, "cli", "srv")[0]
    ax = plots.plot_udp_sweep(table, link_mbps=link)
    lines = lines_by_label(ax)
    assert len(lines["clean step"].get_xdata()) == 2
    assert len(lines["saturated step (loss or no growth)"].get_xdata()) == 1
    diagonal = lines["received = offered"]
    assert list(diagonal.get_xdata()) == list(diagonal.get_ydata())
    assert lines[f"link rate {link:g} Mbit/s"].get_ydata()[0] == link
    assert ax.get_ylim()[1] > table["offered_mbps"].max()
    loss_ax = ax.figure.axes[-1]
    assert loss_ax is not ax and loss_ax.get_ylabel() == "loss (%)"
    assert list(loss_ax.get_lines()[0].get_ydata()) == pytest.approx(table["loss_pct"].tolist())
    assert "loss (%)" in legend_texts(ax)
    with pytest.raises(InputError):
        plots.plot_udp_sweep(table.drop(columns=["loss_pct"]))


# --- topology ----------------------------------------------------------------------------------
def test_draw_portfolio(portfolio):
    ax = topology_plot.draw_topology(portfolio)
    counts = {c.get_label(): len(c.get_offsets()) for c in ax.collections
              if isinstance(c, PathCollection)}
    assert counts == {"host": 9, "router": 4, "switch": 2}
    texts = {t.get_text() for t in ax.texts}
    assert {"L1 40 Mbit/s 10 ms q67", "L2 30 Mbit/s 20 ms q100", "L3 20 Mbit/s 10 ms q33"} <= texts
    assert set(portfolio.names()) <= texts
    assert len(texts) == len(portfolio.nodes) + 3  # unshaped links carry no label
    assert len(ax.get_lines()) == len(portfolio.links)


def test_topology_layout_is_deterministic_and_readable(portfolio):
    pos = topology_plot.topology_layout(portfolio)
    assert pos == topology_plot.topology_layout(portfolio)
    assert set(pos) == set(portfolio.names())
    names = list(pos)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            (xa, ya), (xb, yb) = pos[a], pos[b]
            assert (xa - xb) ** 2 + (ya - yb) ** 2 >= 0.25, (a, b)
    # the routers and their shaped links run left to right, h1's side first
    spine = [pos[n] for n in ("h1", "r1", "r2", "r3", "r4", "h9")]
    assert all(y == 0 for _x, y in spine)
    assert [x for x, _y in spine] == sorted(x for x, _y in spine)


# --- the plot that fits a result ------------------------------------------------------------
@pytest.mark.parametrize("tool, folder, name, kind", [
    ("ping", "ping", "normal.txt", "RTT per reply"),
    ("iperf3", "iperf3", "tcp_server_output.json", "Rate per interval"),
    ("iperf", "iperf2", "udp_overload.txt", "Expected vs measured"),
])
def test_plot_measurement_picks_the_plot_of_the_result(capture_topo, tool, folder, name, kind):
    m = judge_output(tool, fixture(folder, name), capture_topo, "cli", "srv")
    ax = plots.plot_measurement(m)
    assert ax.get_title().startswith(kind)


def test_latency_percentiles_on_a_log_axis(capture_topo):
    """HDR-style: the n-th smallest of n samples sits at 1 / (1 - (n-1)/n) = n."""
    normal = parsed("ping", "ping", "normal.txt").table
    lossy = parsed("ping", "ping", "partial_loss.txt").table
    e = expect.expect_pair(capture_topo, "cli", "srv")
    ax = pitfall_plots.plot_latency_percentiles({"idle": normal, "overloaded": lossy},
                                        expected_ms=e.rtt_ms, max_ms=e.max_rtt_ms,
                                        typical_ms=e.rtt_ms + 1)
    lines = lines_by_label(ax)
    # each series says how many replies it rests on and the last percentile they reach
    assert 10 <= len(normal) < 100
    idle = lines[f"idle ({len(normal)} replies, up to p90)"]
    assert list(idle.get_ydata()) == sorted(normal["rtt_ms"])
    assert idle.get_xdata()[0] == 1 and idle.get_xdata()[-1] == pytest.approx(len(normal))
    assert ax.get_xscale() == "log"
    # the worst RTT of full queues is the steady state's, not what the links can produce
    assert any(lb.startswith("worst in steady state (every queue full)") for lb in lines)
    assert any(lb.startswith("typical under one TCP flow") for lb in lines)
    # a few replies reach p90: no tick promises a p99 or p99.9 they cannot show, and the
    # axis says what p99 would need (counted on the longest series)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0%", "50%", "90%"]
    most = max(len(normal), int(lossy["rtt_ms"].notna().sum()))
    assert ax.get_xlabel().endswith(f"; p99 needs >= 100 replies; {most} here")


def test_latency_percentiles_of_a_dense_train_reach_the_tail():
    """1000 replies (a dense train, derived here by repeating a real capture's samples)
    put the last sample at 1 / (1 - 999/1000) = 1000: the axis reaches p99.9."""
    import pandas as pd

    normal = parsed("ping", "ping", "normal.txt").table
    values = list(normal["rtt_ms"].dropna())
    dense = pd.DataFrame({"rtt_ms": (values * (1000 // len(values) + 1))[:1000]})
    ax = pitfall_plots.plot_latency_percentiles({"dense": dense})
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0%", "50%", "90%", "99%", "99.9%"]
    assert ax.get_xlim()[1] == pytest.approx(1000)
    assert "dense (1000 replies, up to p99.9)" in lines_by_label(ax)
    assert ax.get_xlabel() == "percentile (log scale of 1 / (1 - p))"  # nothing missing


def test_latency_percentiles_of_200_replies_say_p999_needs_more():
    """200 replies (derived by repeating a real capture's samples) reach p99, not p99.9:
    the plot says so instead of drawing the largest sample as p99.9."""
    import pandas as pd

    values = list(parsed("ping", "ping", "normal.txt").table["rtt_ms"].dropna())
    train = pd.DataFrame({"rtt_ms": (values * (200 // len(values) + 1))[:200]})
    ax = pitfall_plots.plot_latency_percentiles({"train": train})
    assert "train (200 replies, up to p99)" in lines_by_label(ax)
    assert ax.get_xlabel().endswith("; p99.9 needs >= 1000 replies; 200 here")


def test_latency_percentiles_leave_out_duplicate_replies():
    """A duplicate reply (ping's DUP!, a real capture) is not a sample: the plot counts the
    replies the ping's summary rests on."""
    from labtools.tools.summaries import reply_count

    run = parsed("ping", "ping", "duplicates.txt")
    replies = reply_count(run.rows)
    assert run.table["duplicate"].any() and replies < run.table["rtt_ms"].notna().sum()
    ax = pitfall_plots.plot_latency_percentiles({"run": run.table})
    assert any(label.startswith(f"run ({replies} repl") for label in lines_by_label(ax))


def test_window_sweep_marks_window_over_rtt_and_the_bdp(capture_topo):
    ceiling = expect.tcp_goodput_ceiling_mbps(20)
    windows = [8_000, 16_000, 32_000]
    rates = [parsed("iperf3", "iperf3", n).summary["receiver_mbps"]
             for n in ("tcp_p1.json", "tcp_omit.json", "tcp_p3.json")]
    ax = pitfall_plots.plot_window_sweep(windows, rates, rtt_ms=40.0, ceiling_mbps=ceiling)
    lines = lines_by_label(ax)
    allowed = lines["window / RTT (40 ms)"]
    x, y = allowed.get_xdata()[0], allowed.get_ydata()[0]
    assert y == pytest.approx(x * 8 / 0.040 / 1e6)
    assert list(lines["measured goodput (receiver)"].get_ydata()) == pytest.approx(rates)
    bdp = [lb for lb in lines if lb.startswith("window = BDP")]
    assert bdp and lines[bdp[0]].get_xdata()[0] == pytest.approx(ceiling * 1e6 * 0.040 / 8)
    with pytest.raises(InputError):
        pitfall_plots.plot_window_sweep([1], [], 40.0, ceiling)


def test_flow_rates_one_line_per_flow(capture_topo):
    flows = [Flow("cli", "srv", 1)]
    result = judge_flows(capture_topo, flows, [parsed("iperf3", "iperf3", "tcp_server_output.json")],
                         JudgeContext())
    ax = pitfall_plots.plot_flow_rates(result.measurements)
    assert list(lines_by_label(ax)) == ["cli → srv"]
