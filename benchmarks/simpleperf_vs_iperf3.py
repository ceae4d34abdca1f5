"""Benchmark (not a test): simpleperf against iperf3, measured in the same run.

1. Loopback (127.0.0.1): each tool's server and client transfer for ``--time`` seconds,
   ``--repeat`` times, alternating tools; the median of each tool's receiver rate
   (Gbit/s) and the ratio simpleperf / iperf3 are reported, with the CPU time of client
   plus server per transferred gigabyte (10^9 bytes).
2. Paced (``--paced``, needs root, ``ip`` and ``tc``): the same at 40 Mbit/s through a
   veth pair between two network namespaces this script creates (and removes), limited
   by a TBF qdisc; reported as the fraction of one core used by client plus server.

CPU time: the server's is its whole-life rusage (``os.wait4``) minus utime + stime read
from ``/proc/PID/stat`` just before the client starts (startup excluded); the client's is
its whole-life rusage from ``os.wait4`` (startup included, about 0.1 s for Python).
The paced run's core fraction is the steady state: client plus server CPU sampled from
``/proc`` every 50 ms, from 1 s after the client started until its last sample.
The loopback estimate of the core fraction at 40 Mbit/s is
``cpu_s_per_GB * 40e6 / 8 / 1e9`` (5 ms of CPU per second per 1 s/GB): it assumes the cost
per byte does not grow at low rates, which the paced run checks.

Usage: ``python benchmarks/simpleperf_vs_iperf3.py [--time 5] [--repeat 3] [--paced]``.
Results are printed as a table and saved to ``benchmarks/results/simpleperf_vs_iperf3.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from labtools.lab import processes
from labtools.system import procfs

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "simpleperf_vs_iperf3.json"
NS_CLIENT, NS_SERVER = "spbench-c", "spbench-s"
ADDR_CLIENT, ADDR_SERVER = "10.251.7.1", "10.251.7.2"
PACED_RATE_MBPS = 40
#: seconds after the client's start before CPU sampling (start-up excluded), and between samples
WARMUP_S, SAMPLE_S = 1.0, 0.05


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (ProcessLookupError once it is gone)."""
    seconds = procfs.cpu_seconds(pid)
    if seconds is None:
        raise ProcessLookupError(pid)
    return seconds


def listening(pid: int, port: int) -> bool:
    """True if a TCP socket listens on ``port`` in the network namespace of ``pid``."""
    return processes.listening(pid, port)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def commands(tool: str, host: str, port: int, seconds: float) -> Dict[str, List[str]]:
    """Server and client argument lists of ``tool`` (``simpleperf`` or ``iperf3``)."""
    if tool == "iperf3":
        return {"server": ["iperf3", "-s", "-1", "-B", host, "-p", str(port)],
                "client": ["iperf3", "-c", host, "-p", str(port), "-t", f"{seconds:g}", "-J"]}
    sp = [sys.executable, "-m", "labtools.tools.simpleperf"]
    return {"server": sp + ["-s", "-b", host, "-p", str(port), "--json"],
            "client": sp + ["-c", "-I", host, "-p", str(port), "-t", f"{seconds:g}", "--json"]}


def received(tool: str, output: str) -> Dict[str, float]:
    """Bytes received, receiver rate (Mbit/s) and duration (s) from a client's output."""
    if tool == "iperf3":
        total = json.loads(output)["end"]["sum_received"]
        return {"bytes": total["bytes"], "rate_mbps": total["bits_per_second"] / 1e6,
                "duration_s": total["seconds"]}
    end = [json.loads(line) for line in output.splitlines() if '"type": "end"' in line][-1]
    return {"bytes": end["server_bytes"], "rate_mbps": end["receiver_mbps"],
            "duration_s": end["server_duration_s"]}


def run_once(tool: str, seconds: float, host: str = "127.0.0.1",
             ns: Optional[Dict[str, List[str]]] = None) -> Dict[str, float]:
    """One transfer of ``tool``; rates, bytes and CPU seconds of client and server."""
    port = free_port()
    cmd = commands(tool, host, port, seconds)
    prefix = ns or {"server": [], "client": []}
    server = subprocess.Popen(prefix["server"] + cmd["server"], cwd=str(ROOT),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not listening(server.pid, port):
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"{tool} server did not start")
            time.sleep(0.05)
        server_cpu0 = cpu_seconds(server.pid)
        with tempfile.TemporaryFile("w+") as out:
            started = time.monotonic()
            client = subprocess.Popen(prefix["client"] + cmd["client"], cwd=str(ROOT),
                                      stdout=out, stderr=subprocess.DEVNULL)
            status, usage, steady = _wait_sampling(client.pid, server.pid)
            client.returncode = os.waitstatus_to_exitcode(status)
            wall = time.monotonic() - started
            out.seek(0)
            output = out.read()
        if client.returncode != 0:
            raise RuntimeError(f"{tool} client exited with {client.returncode}")
    finally:
        server_usage = _stop(server)
    result = received(tool, output)
    client_cpu = usage.ru_utime + usage.ru_stime
    server_cpu = server_usage.ru_utime + server_usage.ru_stime - server_cpu0
    cpu = client_cpu + server_cpu
    result.update({"client_cpu_s": client_cpu, "server_cpu_s": server_cpu, "wall_s": wall,
                   "cpu_s_per_gb": cpu / (result["bytes"] / 1e9),
                   "core_fraction": cpu / wall, "steady_core_fraction": steady})
    return result


def _stop(server: subprocess.Popen) -> "os.struct_rusage":  # type: ignore[name-defined]
    """Stop the server (SIGINT; iperf3 -1 has usually exited) and return its rusage."""
    deadline = time.monotonic() + 10
    signalled = False
    while True:
        pid, status, usage = os.wait4(server.pid, os.WNOHANG)
        if pid:
            server.returncode = os.waitstatus_to_exitcode(status)
            return usage
        if not signalled:
            server.send_signal(signal.SIGINT)
            signalled = True
        if time.monotonic() > deadline:
            server.kill()
        time.sleep(0.05)


def _wait_sampling(client: int, server: int) -> tuple:
    """Wait for the client; (status, rusage, steady-state core fraction of both).

    The steady state starts :data:`WARMUP_S` after the client started (interpreter start-up
    and connection set-up done) and ends at the last /proc sample before it exited.
    """
    started = time.monotonic()
    first: Optional[Tuple[float, float]] = None
    last: Optional[Tuple[float, float]] = None
    while True:
        pid, status, usage = os.wait4(client, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if now - started >= WARMUP_S:
            try:
                sample: Optional[Tuple[float, float]] = (
                    now, cpu_seconds(client) + cpu_seconds(server))
            except ProcessLookupError:
                sample = last
            first = first or sample
            last = sample
        time.sleep(SAMPLE_S)
    steady = None
    if first and last and last[0] - first[0] > 0.5:
        steady = (last[1] - first[1]) / (last[0] - first[0])
    return status, usage, steady


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


def make_paced_link() -> Dict[str, List[str]]:
    """Two namespaces joined by a veth pair, client side limited to 40 Mbit/s by TBF."""
    sh("ip", "netns", "add", NS_CLIENT)
    sh("ip", "netns", "add", NS_SERVER)
    sh("ip", "link", "add", "spb0", "netns", NS_CLIENT, "type", "veth", "peer", "name",
       "spb1", "netns", NS_SERVER)
    for ns, dev, addr in ((NS_CLIENT, "spb0", ADDR_CLIENT), (NS_SERVER, "spb1", ADDR_SERVER)):
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "netns", "exec", NS_CLIENT, "tc", "qdisc", "add", "dev", "spb0", "root", "tbf",
       "rate", f"{PACED_RATE_MBPS}mbit", "burst", "64kb", "latency", "50ms")
    return {"client": ["ip", "netns", "exec", NS_CLIENT],
            "server": ["ip", "netns", "exec", NS_SERVER]}


def remove_paced_link() -> None:
    for ns in (NS_CLIENT, NS_SERVER):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def median_of(runs: List[Dict[str, float]]) -> Dict[str, float]:
    keys = ("rate_mbps", "cpu_s_per_gb", "core_fraction", "bytes")
    return {k: statistics.median(r[k] for r in runs) for k in keys}


def machine() -> Dict[str, str]:
    iperf3 = subprocess.run(["iperf3", "--version"], capture_output=True, text=True)
    return {"kernel": platform.release(), "nproc": str(os.cpu_count()),
            "python": platform.python_version(), "iperf3": iperf3.stdout.split("\n")[0],
            "network": "loopback 127.0.0.1, native (no VM)"}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time", type=float, default=5.0, help="seconds per transfer")
    parser.add_argument("--repeat", type=int, default=3, help="transfers per tool")
    parser.add_argument("--paced", action="store_true",
                        help="also run both tools at 40 Mbit/s between two namespaces (root)")
    args = parser.parse_args(argv)
    tools = ("simpleperf", "iperf3")
    runs: Dict[str, List[Dict[str, float]]] = {t: [] for t in tools}
    for _ in range(args.repeat):
        for tool in tools:
            runs[tool].append(run_once(tool, args.time))
    med = {t: median_of(runs[t]) for t in tools}
    report: Dict[str, object] = {"machine": machine(), "time_s": args.time,
                                 "repeat": args.repeat, "loopback": runs, "median": med}
    report["rate_ratio"] = med["simpleperf"]["rate_mbps"] / med["iperf3"]["rate_mbps"]
    report["core_fraction_at_40mbps_estimate"] = {
        t: med[t]["cpu_s_per_gb"] * PACED_RATE_MBPS * 1e6 / 8 / 1e9 for t in tools}
    if args.paced:
        try:
            ns = make_paced_link()
            report["paced_40mbps"] = {t: run_once(t, args.time, ADDR_SERVER, ns) for t in tools}
        finally:
            remove_paced_link()
    print_table(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {RESULTS.relative_to(ROOT)}")
    return 0


def print_table(report: Dict) -> None:
    med, est = report["median"], report["core_fraction_at_40mbps_estimate"]
    print(f"machine: {report['machine']}")
    print(f"loopback, {report['time_s']:g} s x {report['repeat']} per tool (median):")
    print(f"{'tool':<12}{'Gbit/s':>10}{'CPU s/GB':>10}{'core@40M est':>14}{'core@40M':>10}")
    for tool in ("simpleperf", "iperf3"):
        paced = report.get("paced_40mbps", {}).get(tool)
        measured = f"{paced['steady_core_fraction']:.4f}" if paced else "-"
        print(f"{tool:<12}{med[tool]['rate_mbps'] / 1000:>10.2f}{med[tool]['cpu_s_per_gb']:>10.3f}"
              f"{est[tool]:>14.4f}{measured:>10}")
    print(f"rate ratio simpleperf / iperf3: {report['rate_ratio']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
