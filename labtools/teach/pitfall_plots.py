"""Plots of the measurement pitfalls (notebook 06): latency percentiles, goodput against
the TCP window, and the rate of each concurrent flow over time.

Like :mod:`labtools.teach.plots`: each takes an optional ``ax`` and returns the Axes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Tuple

from labtools.errors import InputError
from labtools.judge import policy
from labtools.model.expect import bdp_bytes, window_rate_mbps
from labtools.teach.plots import _need, new_axes
from labtools.tools.summaries import PERCENTILES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes


def plot_latency_percentiles(series: Dict[str, "pd.DataFrame"], expected_ms: Optional[float] = None,
                             max_ms: Optional[float] = None,
                             ax: Optional["Axes"] = None,
                             typical_ms: Optional[float] = None) -> "Axes":
    """HDR-style latency plot: each series' RTT (ms) against its percentile, on a
    logarithmic "1 / (1 - p)" axis, so the tail (99 %, 99.9 %) gets as much room as the
    median. ``series``: label -> ping table (``rtt_ms``); ``expected_ms`` (propagation),
    ``typical_ms`` (the queue model's median under one TCP flow,
    :mod:`labtools.model.queues`) and ``max_ms`` (the worst RTT of the steady state, every
    queue on the way full, which a burst onto an idle link can exceed) as horizontal
    lines. A series reaches only as far along the axis as its replies do: the
    percentiles beyond them (p99 of fewer than 100 replies) are not drawn, and the axis
    ends at the largest series' last percentile (a dense train of 1000 replies reaches
    p99.9). Each series' label says how many replies it rests on and the last percentile
    they reach; the axis' label names the next one and the replies it needs
    (:func:`labtools.judge.policy.describe_percentile`). Duplicate replies are left out,
    as in the ping's summary."""
    ax = new_axes(ax)
    top = 0.0
    counts = []
    for label, table in series.items():
        largest_ms, n = _percentile_steps(ax, label, table)
        top = max(top, largest_ms)
        counts.append(n)
    for value, style, text in ((expected_ms, ":", "propagation"),
                               (typical_ms, "--", "typical under one TCP flow (model)"),
                               (max_ms, "-.", "worst in steady state (every queue full)")):
        if value is not None:
            ax.axhline(value, color="black", linestyle=style, linewidth=1,
                       label=f"{text}: {value:.1f} ms")
            top = max(top, value)
    ax.set_xscale("log")
    reach = max(10.0, max(counts))
    ticks = [(x, text) for x, text in ((1, "0%"), (2, "50%"), (10, "90%"), (100, "99%"),
                                       (1000, "99.9%"), (10000, "99.99%")) if x <= reach]
    ax.set_xticks([x for x, _ in ticks])
    ax.set_xticklabels([text for _, text in ticks])
    beyond = [p for p in PERCENTILES if policy.percentile_replies_needed(p) > max(counts)]
    xlabel = "percentile (log scale of 1 / (1 - p))" + (
        f"; {policy.describe_percentile(beyond[0], None, max(counts))}" if beyond else "")
    return _finish_log_x(ax, (1, reach), top * 1.15, xlabel, "round-trip time (ms)",
                         "Latency by percentile: the tail, not the mean")


def _percentile_steps(ax: "Axes", label: str, table: "pd.DataFrame") -> Tuple[float, int]:
    """Draw one series of :func:`plot_latency_percentiles` (its replies' RTTs against
    their percentiles, duplicates left out); return its largest RTT (ms) and its number of
    replies."""
    _need(table, ["rtt_ms"], "ping table")
    replies = table[~table["duplicate"].astype(bool)] if "duplicate" in table else table
    values = sorted(float(v) for v in replies["rtt_ms"].dropna())
    if not values:
        raise InputError(f"{label}: no replies to plot")
    n = len(values)
    xs = [1 / (1 - i / n) for i in range(n)]  # the i-th smallest is at percentile i/n
    reached = [p for p in PERCENTILES if policy.percentile_replies_needed(p) <= n]
    ax.step(xs, values, where="post", linewidth=2, label=f"{label} "
            f"({policy.replies_text(n)}, up to {policy.percentile_name(reached[-1])})")
    return values[-1], n


def plot_window_sweep(windows_bytes: Sequence[int], rates_mbps: Sequence[Optional[float]],
                      rtt_ms: float, ceiling_mbps: Optional[float],
                      ax: Optional["Axes"] = None) -> "Axes":
    """Goodput (Mbit/s) against the TCP window asked for (bytes, log scale): the measured
    points, the window / RTT line that a window allows, the path's goodput ceiling and the
    bandwidth-delay product (where the two meet)."""
    if len(windows_bytes) != len(rates_mbps) or not windows_bytes:
        raise InputError("give one rate for each window")
    ax = new_axes(ax)
    xs = sorted(windows_bytes)
    low, high = xs[0] / 2, xs[-1] * 2
    grid = [low * (high / low) ** (i / 60) for i in range(61)]
    allowed = [window_rate_mbps(w, rtt_ms) for w in grid]
    ax.plot(grid, allowed, color="grey", linestyle=":", label=f"window / RTT ({rtt_ms:g} ms)")
    ax.plot(list(windows_bytes), [r if r is not None else float("nan") for r in rates_mbps],
            marker="o", linestyle="-", color="tab:blue", label="measured goodput (receiver)")
    top = max([r for r in rates_mbps if r is not None] + [0.0])
    if ceiling_mbps is not None:
        ax.axhline(ceiling_mbps, color="tab:green", linestyle="--",
                   label=f"goodput ceiling {ceiling_mbps:.1f} Mbit/s")
        bdp = bdp_bytes(ceiling_mbps, rtt_ms)
        ax.axvline(bdp, color="black", linestyle="-.",
                   label=f"window = BDP at the ceiling ({bdp / 1e3:.0f} kB)")
        top = max(top, ceiling_mbps)
    ax.set_xscale("log")
    return _finish_log_x(ax, (low, high), top * 1.3, "TCP window asked for, iperf3 -w (bytes)",
                         "goodput (Mbit/s)",
                         "A window below the bandwidth-delay product caps the rate")


def _finish_log_x(ax: "Axes", x_range: Tuple[float, float], y_top: float, xlabel: str,
                  ylabel: str, title: str) -> "Axes":
    """A plot on a logarithmic x axis made ready to show: its ranges (y from 0 to ``y_top``,
    or 1 when that is 0), labels, title, grid and legend."""
    ax.set_xlim(*x_range)
    ax.set_ylim(0, y_top or 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left")
    return ax


def plot_flow_rates(measurements: Sequence[Any], ax: Optional["Axes"] = None) -> "Axes":
    """Each concurrent flow's receiver rate per interval (Mbit/s over s): how the flows
    share a link over time. ``measurements``: the flows of a
    :class:`~labtools.judge.shares.FlowsMeasurement` (iperf3 with the server's report)."""
    ax = new_axes(ax)
    drawn = 0
    for m in measurements:
        table = m.table
        _need(table, ["side", "stream", "start_s", "end_s", "rate_mbps"], "interval table")
        rows = table[(table["side"] == "receiver") & (table["stream"] == -1)]
        if not len(rows):
            continue
        xs = list(rows["start_s"]) + [float(rows["end_s"].iloc[-1])]
        ys = list(rows["rate_mbps"].fillna(0.0))
        ax.step(xs, ys + ys[-1:], where="post", linewidth=1.5, label=f"{m.src} → {m.dst}")
        drawn += 1
    if not drawn:
        raise InputError("no receiver intervals (iperf3 --get-server-output) to plot")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time since the warm-up (s)")
    ax.set_ylabel("receiver rate (Mbit/s)")
    ax.set_title("Concurrent flows over time")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    return ax
