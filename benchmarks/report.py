"""BENCHMARKS.md from benchmarks/results/bench.json (written by bench.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

from common import fmt

NAIVE_BESIDE = {
    "min RTT / expected": ["avg_rtt / expected", "min_rtt / expected"],
    "receiver goodput (warm-up left out) / ceiling": ["iperf3 receiver avg / ceiling",
                                                      "iperf3 sender / ceiling"],
    "Jain's index of the multiplexing cases": ["jain of senders"],
    "UDP capacity estimate / expected": ["udp sent / bottleneck", "udp received / bottleneck"],
}
NAIVE_LABELS = {
    "avg_rtt / expected": "average of `ping -c 10` / expected",
    "min_rtt / expected": "minimum of `ping -c 10` / expected",
    "iperf3 receiver avg / ceiling": "plain `iperf3 -c`, receiver, whole run / ceiling",
    "iperf3 sender / ceiling": "plain `iperf3 -c`, sender / ceiling",
    "jain of senders": "flows started by hand, Jain's index of the senders' numbers",
    "udp sent / bottleneck": "`iperf -u -b <bottleneck>`, what the client sent / bottleneck",
    "udp received / bottleneck": "`iperf -u -b <bottleneck>`, server report / bottleneck",
}


def _machine(d: Dict[str, Any]) -> List[str]:
    m = d["machine"]
    where = ("inside the lab VM (this kernel has no netem)" if d.get("vm_for_netem")
             else "natively")
    v = m.get("versions", {})
    return [
        "## Machine", "",
        f"- {m['date']}, host `{m['host']}`: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gib']} GiB; kernel {m['kernel']}; Python {m['python']}",
        f"- networks with delay ran {where}; VM runner: QEMU {v.get('qemu')}, "
        f"virtme-ng {v.get('vng')} (software emulation unless KVM works)",
        f"- iperf3 {v.get('iperf3')}, iperf {v.get('iperf')}, ping {v.get('ping')}, "
        f"Mininet {v.get('mn')}; labtools {m['labtools']} ({m['commit']})",
        f"- every figure: median (min-max) of the repeated runs; this run took "
        f"{d.get('took_s', 0) / 60:.0f} min (the parts it ran: see the last section)", "",
    ]


def _fidelity(d: Dict[str, Any]) -> List[str]:
    if "demo" not in d:
        return []
    naive = d.get("naive", {}).get("ratios", {})
    lines = ["## Fidelity: the kit against the numbers taken by hand", "",
             "Each figure divided by what the physics allows (1.00 is exact; a Jain's index "
             "of 1.00 is a perfectly fair share). The kit's come from `make demo`'s runs; "
             "the hand-taken ones from `benchmarks/naive.py` on the same topology.", "",
             "| figure | the kit | by hand |", "|---|---|---|"]
    for figure, s in d["demo"]["kit_ratios"].items():
        beside = NAIVE_BESIDE.get(figure, [])
        hand = "; ".join(f"{NAIVE_LABELS[k]}: {fmt(naive.get(k, {}))}" for k in beside) or "-"
        lines.append(f"| {figure} | {fmt(s)} | {hand} |")
    cal = d.get("calibration")
    if cal:
        lines += ["", f"The machine's own cost, measured by the lab at its start "
                      f"({cal['emulation']}): {cal['unshaped_link_ms']:.2f} ms per unshaped "
                      f"link, {cal['delayed_link_late_ms']:.2f} ms per delayed link, at most "
                      f"{cal['forward_mbps']:.0f} Mbit/s forwarded (one flow through two "
                      "routers). The verdicts take it into account."]
    return lines + [""]


def _demo(d: Dict[str, Any]) -> List[str]:
    if "demo" not in d:
        return []
    return ["## Wall time of `make demo` (the five test cases, VM boot included)", "",
            f"{fmt(d['demo']['wall_s'], 's', 0)} (goal: under 300 s under software "
            "emulation on 2 cores)", ""] + _demo_parts(d["demo"].get("where_s", {}))


DEMO_PARTS = {
    "before_first_s": "before the first measurement (VM boot, imports, lab start, calibration)",
    "measuring_s": "the tools measuring (concurrent flows counted once)",
    "between_s": "between measurements (servers starting and stopping, parsing, judging, "
                 "saving)",
    "after_last_s": "after the last measurement (lab stop, VM shutdown)",
}


def _demo_parts(where: Dict[str, Any]) -> List[str]:
    if not where:
        return []
    runs = where.get("runs", {}).get("median")
    lines = [f"Where it goes ({runs:.0f} measurements, `--duration 10`: each TCP run is 10 s "
             "plus the warm-up left out):" if runs else "Where it goes:", "",
             "| part | seconds |", "|---|---|"]
    lines += [f"| {label} | {fmt(where.get(key, {}), '', 0)} |"
              for key, label in DEMO_PARTS.items()]
    return lines + [""]


def _startup(d: Dict[str, Any]) -> List[str]:
    s = d.get("startup")
    if not s:
        return []
    lines = ["## Network start-up: `portfolio` (15 nodes), the kit against plain Mininet", "",
             "| what | start (s) | stop (s) |", "|---|---|---|",
             f"| the kit's network (batched) | {fmt(s['kit_network']['start_s'])} | "
             f"{fmt(s['kit_network']['stop_s'])} |",
             f"| the kit's lab (network + calibration, as notebooks start it) | "
             f"{fmt(s['kit_lab']['start_s'])} | {fmt(s['kit_lab']['stop_s'])} |",
             f"| plain Mininet, Python API (`Mininet(...)`, Linux bridges, TCLink) | "
             f"{fmt(s['mininet_api']['start_s'])} | {fmt(s['mininet_api']['stop_s'])} |",
             f"| `mn --custom topologies/portfolio.py ... --test none` (whole run) | "
             f"{fmt(s['mn_command']['wall_s'])} | |", "",
             "Where the kit's start goes (seconds per phase):", "",
             "| phase | seconds |", "|---|---|"]
    lines += [f"| {p} | {fmt(v)} |" for p, v in s["kit_network"]["phases"].items()]
    return lines + [""]


def _scale_table(title: str, data: Dict[str, Any]) -> List[str]:
    lines = [f"### {title}", "",
             "| network | hosts | kit start (s) | kit stop (s) | memory (MiB) | ping (ms) | "
             "plain Mininet start / stop (s) |", "|---|---|---|---|---|---|---|"]
    for kind, rows in data["kinds"].items():
        for n, row in rows.items():
            if "skipped" in row:
                lines.append(f"| {kind} | {n} | skipped: {row['skipped']} | | | | |")
                continue
            mn = row.get("mininet")
            plain = f"{mn['start_s']:.1f} / {mn['stop_s']:.1f}" if mn else "-"
            lines.append(f"| {kind} | {n} | {fmt(row['start_s'], '', 1)} | "
                         f"{fmt(row['stop_s'], '', 1)} | {fmt(row['memory_mib'], '', 0)} | "
                         f"{fmt(row['ping_ms'], '', 3)} | {plain} |")
    limit_s = data.get("limit_s", 300)
    for kind, rows in data["kinds"].items():
        fits = [int(n) for n, row in rows.items()
                if "skipped" not in row and row["start_s"]["max"] is not None
                and row["start_s"]["max"] <= limit_s]
        largest = f"{max(fits)} hosts" if fits else "none of the sizes tried"
        lines.append(f"\nLargest {kind} that started in under {limit_s:.0f} s: {largest} "
                     f"(sizes tried: {', '.join(rows)}).")
    return lines + [""]


def _scale(d: Dict[str, Any]) -> List[str]:
    lines: List[str] = []
    if d.get("scale_native"):
        lines += ["## Scale: star and tree networks (no shaping, no delay)", ""]
        lines += _scale_table("natively", d["scale_native"])
    if d.get("scale_vm"):
        lines += _scale_table("inside the lab VM (software emulation)", d["scale_vm"])
    if d.get("scale_vm_failed"):
        lines += ["Inside the lab VM the run stopped early (the sizes above are those it "
                  f"finished): {d['scale_vm_failed']}", ""]
    return lines


def _overhead(d: Dict[str, Any]) -> List[str]:
    from common import spread

    o = d.get("overhead")
    if not o:
        return []
    rows = ["## Tool overhead: simpleperf against iperf3 (natively)", "",
            "| tool | loopback Gbit/s | CPU s per GB (loopback) | core at 40 Mbit/s, paced |",
            "|---|---|---|---|"]
    for tool in ("simpleperf", "iperf3"):
        runs = o.get("loopback", {}).get(tool, [])
        gbps = spread([r["rate_mbps"] / 1000 for r in runs])
        cpu = spread([r["cpu_s_per_gb"] for r in runs])
        paced = (o.get("paced_40mbps") or {}).get(tool, {}).get("steady_core_fraction")
        rows.append(f"| {tool} | {fmt(gbps, '', 1)} | {fmt(cpu, '', 3)} | "
                    f"{'-' if paced is None else f'{paced:.3f}'} |")
    ratio = o.get("rate_ratio")
    if ratio:
        rows += ["", f"Rate ratio simpleperf / iperf3 (medians): {ratio:.2f}."]
    return rows + ["", "Raw numbers: `benchmarks/results/simpleperf_vs_iperf3.json`.", ""]


def _time_and_failures(d: Dict[str, Any]) -> List[str]:
    ran = d.get("ran") or list(d.get("part_s", {}))
    lines = ["## Where the time went, part by part", "",
             f"This run ran: {', '.join(ran)}. A part it did not run keeps the results of the "
             "run shown beside it.", "",
             "| part | seconds | run at (UTC) | commit |", "|---|---|---|---|"]
    for part, secs in d.get("part_s", {}).items():
        when = d.get("part_run", {}).get(part, {})
        lines.append(f"| {part} | {secs} | {when.get('date', '-')} | {when.get('commit', '-')} |")
    for part, reason in d.get("failed", {}).items():
        lines += ["", f"**{part} failed in this run** (what it finished is shown above): "
                      f"{reason.splitlines()[-1] if reason else ''}"]
    return lines + [""]


def write_report(data: Dict[str, Any], path: Path) -> None:
    """Write BENCHMARKS.md from the combined results."""
    lines = ["# Benchmarks", "",
             "Written by `make bench` (benchmarks/bench.py); raw numbers in "
             "`benchmarks/results/bench.json`. Benchmarks measure; they are not tests.", ""]
    for part in (_machine, _demo, _fidelity, _startup, _scale, _overhead,
                 _time_and_failures):
        lines += part(data)
    path.write_text("\n".join(lines).rstrip() + "\n")
