"""Plots of measurements next to what the physics allows (matplotlib).

Every function takes an optional ``ax`` (a new figure is made when it is None) and returns
the matplotlib Axes it drew on, so a notebook can add to it. matplotlib is imported inside
the functions: importing this module stays cheap. Rates are in Mbit/s, times in s, RTTs in
ms, as in the kit's tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from labtools.errors import InputError
from labtools.frame_sizes import TCP_FRAME_BYTES, TCP_MSS_BYTES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

#: colour of each verdict of :mod:`labtools.judge.verdicts`
VERDICT_COLOURS = {"ok": "tab:green", "inconclusive": "tab:grey", "suspicious": "tab:orange",
                   "invalid": "tab:red"}
SIDE_STYLE: Dict[str, Dict[str, Any]] = {
    "sender": dict(color="tab:orange", linestyle="--",
                   label="sender (bytes written to its socket)"),
    "receiver": dict(color="tab:blue", linestyle="-", label="receiver (bytes that arrived)"),
}

#: TCP payload per frame, as the plots' labels write it
PAYLOAD_PER_FRAME = f"{TCP_MSS_BYTES}/{TCP_FRAME_BYTES}"


def new_axes(ax: Optional["Axes"], size: Tuple[float, float] = (8, 4.5)) -> "Axes":
    """``ax``, or the Axes of a new figure of ``size`` inches."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _fig, new = plt.subplots(figsize=size)
    return new


def _need(table: "pd.DataFrame", columns: List[str], what: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(f"{what} has no {', '.join(missing)} column(s)")


def _per_side(table: "pd.DataFrame") -> Dict[str, "pd.DataFrame"]:
    """Interval rows per side (start_s, end_s, rate_mbps): the per-stream sum rows where the
    table has them (iperf3: ``stream == -1``), otherwise the streams added up interval by
    interval (the n-th interval of each connection together: servers time each connection
    on their own clock).
    Slivers shorter than a fifth of the median interval (the last few ms) are left out;
    iperf3's omitted (``-O``) intervals come first, the rest shifted after them."""
    _need(table, ["side", "start_s", "end_s", "rate_mbps"], "interval table")
    rows = table
    if "stream" in table.columns and (table["stream"] == -1).any():  # iperf3's sum rows
        rows = table[table["stream"] == -1]
    if "omitted" in rows.columns and rows["omitted"].astype(bool).any():
        # iperf3 -O restarts its clock after the omitted seconds: put them first
        omitted = rows["omitted"].astype(bool)
        shift = float(rows[omitted]["end_s"].max())
        rows = rows.copy()
        rows.loc[~omitted, ["start_s", "end_s"]] += shift
    span = rows["end_s"].astype(float) - rows["start_s"].astype(float)
    if len(rows):
        rows = rows[span >= 0.2 * float(span.median())]
    conn = next((c for c in ("conn", "stream", "socket") if c in rows.columns), None)
    out = {}
    for side in ("sender", "receiver"):
        part = rows[rows["side"] == side].sort_values("start_s")
        if not len(part):
            continue
        keys = part.groupby(conn).cumcount() if conn else part.groupby("start_s").ngroup()
        out[side] = part.assign(k=keys.values).groupby("k", as_index=False).agg(
            start_s=("start_s", "min"), end_s=("end_s", "max"), rate_mbps=("rate_mbps", "sum"))
    return out


def plot_intervals(table: "pd.DataFrame", link_mbps: Optional[float] = None,
                   ceiling_mbps: Optional[float] = None, warmup_s: Optional[float] = None,
                   ax: Optional["Axes"] = None) -> "Axes":
    """Sender and receiver rate per interval (Mbit/s over s), as steps, with the link rate
    and the TCP goodput ceiling as horizontal lines and the warm-up (``warmup_s`` seconds,
    discarded by the verdicts; by default iperf3's ``-O`` omitted intervals) shaded.
    ``table`` is an iperf3 or simpleperf interval table (columns side, start_s, end_s,
    rate_mbps)."""
    sides = _per_side(table)
    if not sides:
        raise InputError("no intervals to plot: run the tool with an interval (-i 1)")
    if warmup_s is None and "omitted" in table.columns and table["omitted"].astype(bool).any():
        warmup_s = float(table[table["omitted"].astype(bool)]["end_s"].max())
    ax = new_axes(ax)
    top = 0.0
    for side in sorted(sides, key=lambda side: side != "receiver"):  # sender drawn on top
        rows = sides[side]
        xs = list(rows["start_s"]) + [float(rows["end_s"].iloc[-1])]
        ys = list(rows["rate_mbps"].fillna(0.0))
        ax.step(xs, ys + ys[-1:], where="post", linewidth=2, **SIDE_STYLE[side])
        top = max(top, max(ys))
    if link_mbps is not None:
        ax.axhline(link_mbps, color="black", linestyle="-.", linewidth=1,
                   label=f"link rate {link_mbps:g} Mbit/s")
        top = max(top, link_mbps)
        _mark_overshoot(ax, sides.get("sender"), link_mbps)
    if ceiling_mbps is not None:
        ax.axhline(ceiling_mbps, color="tab:green", linestyle=":", linewidth=1.5,
                   label=f"TCP goodput ceiling {ceiling_mbps:.1f} Mbit/s ({PAYLOAD_PER_FRAME})")
        top = max(top, ceiling_mbps)
    if warmup_s:
        ax.axvspan(0, warmup_s, color="grey", alpha=0.2,
                   label=f"warm-up, first {warmup_s:.2g} s (not counted)")
    if "receiver" not in sides:
        ax.text(0.01, 0.02, "no receiver intervals in this output (iperf3: --get-server-output)",
                transform=ax.transAxes, fontsize="small", color="tab:red")
    ax.set_ylim(0, top * 1.15 or 1)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("rate (Mbit/s)")
    ax.set_title("Rate per interval: trust the receiver")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    return ax


def _mark_overshoot(ax: "Axes", sender: Optional["pd.DataFrame"], link_mbps: float) -> None:
    """Red crosses on the sender's intervals above the link rate (no wire carries that)."""
    from labtools.judge.rate_verdicts import flag_sender_intervals

    if sender is None or not len(sender):
        return
    flagged = flag_sender_intervals(sender, link_mbps)
    over = flagged[flagged["above_link"]]
    if len(over):
        ax.plot((over["start_s"] + over["end_s"]) / 2, over["rate_mbps"], linestyle="none",
                marker="x", markersize=9, markeredgewidth=2, color="tab:red",
                label=f"sender above the link rate ({len(over)})")


def plot_rtts(ping_table: "pd.DataFrame", expected_ms: Optional[float] = None,
              ax: Optional["Axes"] = None) -> "Axes":
    """RTT samples (ms) by sequence number with the minimum, the average, the outlier
    threshold and the expected RTT as lines; outliers (see
    :func:`labtools.judge.verdicts.flag_rtt_outliers`) marked with red crosses, sequence numbers
    without a reply as grey triangles on the x axis. ``ping_table`` is the ping parser's
    table (columns seq, rtt_ms)."""
    from labtools.judge.policy import outlier_threshold_ms
    from labtools.judge.verdicts import flag_rtt_outliers

    _need(ping_table, ["rtt_ms"], "ping table")
    flagged = flag_rtt_outliers(ping_table)
    replies = flagged[flagged["rtt_ms"].notna()]
    if not len(replies):
        raise InputError("no replies to plot: every ping was lost")
    seq = "seq" if "seq" in flagged.columns else None
    xs = replies[seq] if seq else replies.index + 1
    ax = new_axes(ax)
    ax.plot(xs, replies["rtt_ms"], marker="o", markersize=4, color="tab:blue",
            label="RTT samples")
    out = replies[replies["outlier"].astype(bool)]
    if len(out):
        ax.plot(out[seq] if seq else out.index + 1, out["rtt_ms"], linestyle="none",
                marker="x", markersize=10, markeredgewidth=2, color="tab:red",
                label=f"outliers ({len(out)})")
    if seq:
        got = set(int(x) for x in replies[seq])
        lost = sorted(set(range(min(got), max(got) + 1)) - got)
        if lost:
            ax.plot(lost, [0.0] * len(lost), linestyle="none", marker="v", color="grey",
                    label=f"no reply ({len(lost)})", clip_on=False)
    low, mean = float(replies["rtt_ms"].min()), float(replies["rtt_ms"].mean())
    ax.axhline(low, color="tab:green", linewidth=1.5, label=f"minimum {low:.3g} ms")
    ax.axhline(mean, color="tab:purple", linestyle="--", label=f"average {mean:.3g} ms")
    top = float(replies["rtt_ms"].max())
    limit = outlier_threshold_ms(low)
    ax.axhline(limit, color="grey", linestyle=":", label=f"outlier threshold {limit:.3g} ms"
               + ("" if limit <= top * 1.15 else " (off scale)"))
    if expected_ms is not None:
        ax.axhline(expected_ms, color="black", linestyle="-.",
                   label=f"expected {expected_ms:g} ms (2 × delays)")
        top = max(top, expected_ms)
    ax.set_ylim(0, top * 1.15 or 1)
    ax.set_xlabel("ICMP sequence number")
    ax.set_ylabel("round-trip time (ms)")
    ax.set_title("RTT per reply: judge the path by its minimum")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def plot_expected_vs_measured(compare_df: "pd.DataFrame", ax: Optional["Axes"] = None) -> "Axes":
    """Horizontal bars of expected (grey) and measured (coloured by verdict) per row of a
    verdict table (:data:`labtools.judge.verdicts.COMPARE_COLUMNS`). With mixed units every row
    is drawn as a percentage of its expected value."""
    from matplotlib.patches import Patch

    from labtools.judge.verdicts import COMPARE_COLUMNS

    _need(compare_df, COMPARE_COLUMNS, "verdict table")
    if not len(compare_df):
        raise InputError("the verdict table is empty")
    rows = compare_df.reset_index(drop=True)
    mixed = rows["unit"].nunique() > 1
    ax = new_axes(ax, (8, 1.2 + 0.8 * len(rows)))
    for i, row in rows.iterrows():
        y = len(rows) - 1 - i
        usable = row["expected"] is not None and row["expected"] == row["expected"] \
            and row["expected"] != 0
        if mixed and not usable:
            ax.text(0, y, f" {row['measured']} {row['unit']}: no expected value to compare "
                    "as a percentage", va="center", fontsize="small")
            continue
        scale = 100.0 / row["expected"] if mixed else 1.0
        for value, dy, colour, hatch in (
                (row["expected"], 0.2, "lightgrey", "//"),
                (row["measured"], -0.2, VERDICT_COLOURS.get(row["verdict"], "grey"), None)):
            if value is None or value != value:
                ax.text(0, y + dy, " no value", va="center", fontsize="small")
                continue
            ax.barh(y + dy, value * scale, height=0.38, color=colour, hatch=hatch,
                    edgecolor="black", linewidth=0.5)
            ax.text(value * scale, y + dy, f" {value:.4g} {row['unit']}", va="center",
                    fontsize="small")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{m} ({u})" for m, u in zip(rows["metric"][::-1], rows["unit"][::-1])])
    ax.set_xlabel("% of expected" if mixed else f"value ({rows['unit'].iloc[0]})")
    ax.set_xlim(0, ax.get_xlim()[1] * 1.25)
    handles = [Patch(facecolor="lightgrey", hatch="//", edgecolor="black", label="expected")]
    handles += [Patch(color=c, label=f"measured: {v}") for v, c in VERDICT_COLOURS.items()]
    ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_title("Expected vs measured")
    ax.grid(True, axis="x", alpha=0.3)
    return ax


def plot_shares(shares_table: "pd.DataFrame", ax: Optional["Axes"] = None) -> "Axes":
    """Each flow's measured receiver rate (bars, Mbit/s) with its max-min fair share of the
    link rate and of the TCP goodput as short lines over the bar; the sender's claim as a
    hollow marker. ``shares_table`` is the ``table`` of a
    :class:`~labtools.judge.shares.FlowsMeasurement`."""
    _need(shares_table, ["flow", "connections", "expected_share_mbps",
                         "expected_goodput_mbps", "measured_mbps"], "shares table")
    rows = shares_table.reset_index(drop=True)
    ax = new_axes(ax)
    xs = list(range(len(rows)))
    ax.bar(xs, rows["measured_mbps"].fillna(0.0), width=0.6, color="tab:blue",
           label="measured (receiver)")
    lines: Tuple[Tuple[str, Dict[str, Any], str], ...] = (
        ("expected_share_mbps", dict(color="black", linestyles="-"), "fair share (link rate)"),
        ("expected_goodput_mbps", dict(color="tab:green", linestyles="--"),
         f"fair share × {PAYLOAD_PER_FRAME} (TCP goodput)"))
    for column, style, label in lines:
        values = rows[column]
        keep = [x for x, v in zip(xs, values) if v is not None and v == v]
        if keep:
            ax.hlines([values[x] for x in keep], [x - 0.4 for x in keep],
                      [x + 0.4 for x in keep], linewidth=2.5, label=label, **style)
    if "sender_mbps" in rows.columns and rows["sender_mbps"].notna().any():
        ax.plot(xs, rows["sender_mbps"], linestyle="none", marker="o", markersize=9,
                markerfacecolor="none", color="tab:orange", label="sender's claim")
    ax.set_xticks(xs)
    ax.set_xlim(-0.8, len(xs) - 0.2)
    ax.set_xticklabels([f"{f}\n×{c} conn." if c > 1 else f"{f}\n1 conn."
                        for f, c in zip(rows["flow"], rows["connections"])])
    ax.set_ylabel("rate (Mbit/s)")
    ax.set_title("Concurrent flows: measured vs max-min fair share")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def plot_udp_sweep(capacity_table: "pd.DataFrame", link_mbps: Optional[float] = None,
                   ax: Optional["Axes"] = None) -> "Axes":
    """Received vs offered UDP rate (Mbit/s) for a capacity search
    (:data:`labtools.judge.capacity.CAPACITY_COLUMNS`): clean steps as dots, saturated steps as
    red crosses, the ``received = offered`` line, the link rate, and the loss (%) on a
    second y axis (``ax.figure.axes[-1]``)."""
    from labtools.judge.capacity import CAPACITY_COLUMNS

    _need(capacity_table, CAPACITY_COLUMNS, "capacity table")
    rows = capacity_table.sort_values("offered_mbps")
    if not len(rows):
        raise InputError("the capacity table is empty")
    ax = new_axes(ax)
    top = float(max(rows["offered_mbps"].max(), rows["received_mbps"].max(), link_mbps or 0))
    ax.plot([0, top * 1.1], [0, top * 1.1], color="grey", linestyle=":",
            label="received = offered")
    ax.plot(rows["offered_mbps"], rows["received_mbps"], color="tab:blue", label="received")
    sat = rows["saturated"].astype(bool)
    ax.plot(rows[~sat]["offered_mbps"], rows[~sat]["received_mbps"], linestyle="none",
            marker="o", color="tab:blue", label="clean step")
    ax.plot(rows[sat]["offered_mbps"], rows[sat]["received_mbps"], linestyle="none",
            marker="x", markersize=9, markeredgewidth=2, color="tab:red",
            label="saturated step (loss or no growth)")
    if link_mbps is not None:
        ax.axhline(link_mbps, color="black", linestyle="-.",
                   label=f"link rate {link_mbps:g} Mbit/s")
    ax.set_xlim(0, top * 1.1)
    ax.set_ylim(0, top * 1.1)
    ax.set_xlabel("offered rate (Mbit/s)")
    ax.set_ylabel("received rate (Mbit/s)")
    ax.set_title("UDP capacity search")
    ax.grid(True, alpha=0.3)
    loss_ax = ax.twinx()
    loss_ax.plot(rows["offered_mbps"], rows["loss_pct"].astype(float), color="tab:red",
                 linestyle="--", marker=".", alpha=0.6, label="loss (%)")
    loss_ax.set_ylabel("loss (%)", color="tab:red")
    loss_ax.set_ylim(0, max(5.0, float(rows["loss_pct"].astype(float).max() or 0) * 1.2))
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = loss_ax.get_legend_handles_labels()
    ax.legend(handles + more, labels + more_labels, fontsize="small", loc="upper left")
    return ax


def plot_measurement(result: Any, ax: Optional["Axes"] = None) -> "Axes":
    """The plot that fits a judged result: RTT samples for a ping, sender and receiver per
    interval for a TCP transfer, expected vs measured for UDP, the shares of concurrent
    flows, the sweep of a capacity search."""
    from labtools.judge.capacity import CapacitySearch
    from labtools.judge.shares import FlowsMeasurement

    if isinstance(result, FlowsMeasurement):
        return plot_shares(result.table, ax=ax)
    if isinstance(result, CapacitySearch):
        link = result.expected.bottleneck_mbps if result.expected else None
        return plot_udp_sweep(result.table, link_mbps=link, ax=ax)
    kind, e = result.summary.kind, result.expected
    if kind == "rtt":
        return plot_rtts(result.table, None if e is None else e.rtt_ms, ax=ax)
    if kind == "tcp" and "side" in result.table.columns and len(result.table):
        return plot_intervals(result.table, None if e is None else e.bottleneck_mbps,
                              None if e is None else e.tcp_goodput_ceiling_mbps,
                              result.summary.warmup_s or None, ax=ax)
    return plot_expected_vs_measured(result.verdicts_table, ax=ax)

