"""Plots of measurements next to what the physics allows (matplotlib).

Every function takes an optional ``ax`` (a new figure is made when it is None) and returns
the matplotlib Axes it drew on, so a notebook can add to it. matplotlib is imported inside
the functions: importing this module stays cheap. Rates are in Mbit/s, times in s, RTTs in
ms, as in the kit's tables.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from labtools.errors import InputError
from labtools.model.topology import HOST, ROUTER, SWITCH, Link, Topology

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

#: colour of each verdict of :mod:`labtools.judge.verdicts`
VERDICT_COLOURS = {"ok": "tab:green", "suspicious": "tab:orange", "invalid": "tab:red"}
SIDE_STYLE = {
    "sender": dict(color="tab:orange", linestyle="--",
                   label="sender (bytes written to its socket)"),
    "receiver": dict(color="tab:blue", linestyle="-", label="receiver (bytes that arrived)"),
}
NODE_STYLE = {
    HOST: dict(marker="o", color="#9ecae1", label="host"),
    ROUTER: dict(marker="s", color="#fdae6b", label="router"),
    SWITCH: dict(marker="D", color="#c7e9c0", label="switch"),
}


def _axes(ax: Optional["Axes"], size: Tuple[float, float] = (8, 4.5)) -> "Axes":
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
    table has them (iperf3: ``stream == -1``), otherwise the streams added up interval by interval (the n-th interval
    of each connection together: servers time each connection on their own clock).
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
    ax = _axes(ax)
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
    if ceiling_mbps is not None:
        ax.axhline(ceiling_mbps, color="tab:green", linestyle=":", linewidth=1.5,
                   label=f"TCP goodput ceiling {ceiling_mbps:.1f} Mbit/s (1448/1514)")
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


def plot_rtts(ping_table: "pd.DataFrame", expected_ms: Optional[float] = None,
              ax: Optional["Axes"] = None) -> "Axes":
    """RTT samples (ms) by sequence number with the minimum, the average, the outlier
    threshold and the expected RTT as lines; outliers (see
    :func:`labtools.judge.verdicts.flag_rtt_outliers`) marked with red crosses, sequence numbers
    without a reply as grey triangles on the x axis. ``ping_table`` is the ping parser's
    table (columns seq, rtt_ms)."""
    from labtools.judge.verdicts import flag_rtt_outliers, outlier_threshold_ms

    _need(ping_table, ["rtt_ms"], "ping table")
    flagged = flag_rtt_outliers(ping_table)
    replies = flagged[flagged["rtt_ms"].notna()]
    if not len(replies):
        raise InputError("no replies to plot: every ping was lost")
    seq = "seq" if "seq" in flagged.columns else None
    xs = replies[seq] if seq else replies.index + 1
    ax = _axes(ax)
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
    ax = _axes(ax, (8, 1.2 + 0.8 * len(rows)))
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
    hollow marker. ``shares_table`` is the ``table`` of :func:`labtools.lab.probes.shares_table`."""
    _need(shares_table, ["flow", "connections", "expected_share_mbps",
                         "expected_goodput_mbps", "measured_mbps"], "shares table")
    rows = shares_table.reset_index(drop=True)
    ax = _axes(ax)
    xs = list(range(len(rows)))
    ax.bar(xs, rows["measured_mbps"].fillna(0.0), width=0.6, color="tab:blue",
           label="measured (receiver)")
    for column, style, label in (
            ("expected_share_mbps", dict(color="black", linestyles="-"), "fair share (link rate)"),
            ("expected_goodput_mbps", dict(color="tab:green", linestyles="--"),
             "fair share × 1448/1514 (TCP goodput)")):
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
    (:data:`labtools.lab.capacity.CAPACITY_COLUMNS`): clean steps as dots, saturated steps as
    red crosses, the ``received = offered`` line, the link rate, and the loss (%) on a
    second y axis (``ax.figure.axes[-1]``)."""
    from labtools.lab.capacity import CAPACITY_COLUMNS

    _need(capacity_table, CAPACITY_COLUMNS, "capacity table")
    rows = capacity_table.sort_values("offered_mbps")
    if not len(rows):
        raise InputError("the capacity table is empty")
    ax = _axes(ax)
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
        ax.axhline(link_mbps, color="black", linestyle="-.", label=f"link rate {link_mbps:g} Mbit/s")
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


# --- topology drawing ----------------------------------------------------------------------
def link_label(link: Link) -> str:
    """``L1 40 Mbit/s 10 ms q67``: the link's name and shaping (what is set)."""
    parts = [link.label]
    if link.bw_mbps is not None:
        parts.append(f"{link.bw_mbps:g} Mbit/s")
    if link.delay_ms:
        parts.append(f"{link.delay_ms:g} ms")
    if link.loss_pct:
        parts.append(f"{link.loss_pct:g} % loss")
    if link.queue_pkts is not None:
        parts.append(f"q{link.queue_pkts}")
    return " ".join(parts)


def _farthest(topo: Topology, start: str) -> Tuple[str, Dict[str, Optional[str]]]:
    """Dijkstra from ``start`` where shaped links weigh 10 and others 1: the farthest node
    (first in definition order on ties) and the parent of each reached node."""
    import heapq

    order = {name: i for i, name in enumerate(topo.names())}
    dist: Dict[str, float] = {start: 0.0}
    parent: Dict[str, Optional[str]] = {start: None}
    heap = [(0.0, order[start], start)]
    while heap:
        d, _o, node = heapq.heappop(heap)
        if d > dist[node]:
            continue
        for link in topo.links_of(node):
            nxt, nd = link.other(node), d + (10.0 if link.shaped else 1.0)
            if nd < dist.get(nxt, float("inf")):
                dist[nxt], parent[nxt] = nd, node
                heapq.heappush(heap, (nd, order[nxt], nxt))
    far = max(dist, key=lambda n: (dist[n], -order[n]))
    return far, parent


def _spine(topo: Topology) -> List[str]:
    """The longest path (shaped links weigh most), from the first host's side."""
    first = (topo.hosts or topo.names())[0]
    one, _ = _farthest(topo, first)
    other, parent = _farthest(topo, one)
    spine = [other]
    while parent[spine[-1]] is not None:
        spine.append(parent[spine[-1]])  # type: ignore[arg-type]
    if first in spine and spine.index(first) > len(spine) // 2:
        spine.reverse()
    return spine


def _hanging(topo: Topology, spine: List[str]) -> Dict[str, List[str]]:
    """Breadth-first tree from the spine: each node's children off the spine."""
    children: Dict[str, List[str]] = {n: [] for n in topo.names()}
    seen, queue = set(spine), deque(spine)
    while queue:
        node = queue.popleft()
        for link in topo.links_of(node):
            nxt = link.other(node)
            if nxt not in seen:
                seen.add(nxt)
                children[node].append(nxt)
                queue.append(nxt)
    return children


def topology_layout(topo: Topology) -> Dict[str, Tuple[float, float]]:
    """Deterministic node positions: the longest path (shaped links weigh most) runs left to
    right at y = 0, starting from the side of the first host; every other node hangs below
    the spine node it is nearest to, subtrees side by side."""
    spine = _spine(topo)
    children = _hanging(topo, spine)

    def width(node: str) -> int:
        return max(1, sum(width(c) for c in children[node]))

    pos: Dict[str, Tuple[float, float]] = {}

    def place(node: str, left: float, depth: int) -> None:
        pos[node] = (left + width(node) / 2, -depth)
        for child in children[node]:
            place(child, left, depth + 1)
            left += width(child)

    cursor = 0.0
    for i, node in enumerate(spine):
        if i and any(lk.shaped for lk in topo.links_of(node) if lk.joins(node, spine[i - 1])):
            cursor += 1.5  # room for the link's label
        span = max(1, sum(width(c) for c in children[node]))
        left = cursor
        for child in children[node]:
            place(child, left, 1)
            left += width(child)
        pos[node] = (cursor + span / 2, 0.0)
        cursor += span
    for index, name in enumerate(n for n in topo.names() if n not in pos):
        pos[name] = (float(index), 1.0)  # not connected: a row above
    return pos


def draw_topology(topo: Topology, ax: Optional["Axes"] = None) -> "Axes":
    """The topology: hosts (circles), routers (squares), switches (diamonds); shaped links
    thick and labelled with rate, delay and queue (``L1 40 Mbit/s 10 ms q67``)."""
    pos = topology_layout(topo)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    ax = _axes(ax, (max(6.0, 0.9 * (max(xs) - min(xs) + 2)), 1.5 + 1.3 * (max(ys) - min(ys) + 1)))
    for link in topo.links:
        (x1, y1), (x2, y2) = pos[link.a], pos[link.b]
        style = dict(color="tab:red", linewidth=3, zorder=1) if link.shaped else \
            dict(color="grey", linewidth=1, zorder=1)
        ax.plot([x1, x2], [y1, y2], **style)
        if link.shaped:
            ax.text((x1 + x2) / 2, (y1 + y2) / 2 + 0.18, link_label(link), ha="center",
                    va="bottom", fontsize="small", zorder=3,
                    bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1))
    for kind, style in NODE_STYLE.items():
        names = topo.names(kind)
        if names:
            ax.scatter([pos[n][0] for n in names], [pos[n][1] for n in names], s=650,
                       marker=style["marker"], color=style["color"], edgecolors="black",
                       zorder=2, label=style["label"])
            for n in names:
                ax.text(pos[n][0], pos[n][1], n, ha="center", va="center", fontsize="small",
                        zorder=4)
    ax.set_xlim(min(xs) - 1, max(xs) + 1)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.9)
    ax.set_axis_off()
    ax.set_title(f"Topology {topo.name}: shaped links in red (rate, one-way delay, queue in packets)",
                 fontsize="medium")
    ax.legend(loc="upper right", fontsize="small", markerscale=0.4, labelspacing=1.2)
    return ax
