"""`make bench`: every benchmark in one run, then BENCHMARKS.md and benchmarks/results/bench.json.

1. the five-test-case demonstration (`make demo`'s command, the VM's boot included),
   ``--repeat`` times: its wall time, and the kit's ratios to the physics;
2. the same figures taken by hand (benchmarks/naive.py) on the same topology;
3. network start-up: the kit against plain Mininet (benchmarks/startup.py);
4. scale: star and tree networks of 10 to 1000 hosts, natively (``scale``) and in the VM
   (``scale-vm``; benchmarks/scale.py);
5. tool overhead: simpleperf against iperf3 (benchmarks/simpleperf_vs_iperf3.py);
6. a class (``class``): students' labs at once natively in user namespaces, the course hub's
   spawns, and what a class of 100 needs (benchmarks/classroom.py);
6b. grading (``grading``): each lab and a submission autograded against nbgrader's floor,
   a class of 100 serially and with ``labtools autograde`` (benchmarks/grading.py);
6c. the real labs (``labs``): each solution notebook's CPU and memory while it measures,
   against the class part's star lab (benchmarks/labcost.py, in the lab VM where needed);
7. the machine's own calibration (what the lab measured at its last start).

Parts that need netem run inside the lab VM when this kernel has none (`labtools vm`).
Takes about an hour under software emulation; ``--repeat 1`` for a quick look (spreads
then have one value). ``--only demo,startup`` runs some parts and keeps the others' last
results.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

from common import RESULTS, ROOT, machine_info, say, spread, write_json

PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").is_dir() else sys.executable
LABTOOLS = str(Path(PY).parent / "labtools")
PARTS = ("naive", "startup", "demo", "scale", "scale-vm", "overhead", "class", "grading",
         "labs")
VM_MEMORY = "6G"  # 1000 hosts, each a shell in its own namespace


def needs_vm() -> bool:
    """Whether the course's labs (delays) need the lab VM here (LabSession's question)."""
    from labtools.lab.placement import runs_natively

    return not runs_natively()


def in_lab_vm(argv: List[str], timeout_s: int = 7200) -> None:
    """Run ``argv`` where netem works: here, or in the lab VM (which then boots)."""
    subprocess.run([LABTOOLS, "vm", "--if-needed", "--memory", VM_MEMORY,
                    "--timeout", str(timeout_s), "--", *argv], cwd=str(ROOT), check=True)


def demo(repeat: int) -> Dict[str, Any]:
    """`make demo`'s command, timed from the shell (the VM's boot included)."""
    work = RESULTS / "demo"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    runs = []
    for i in range(repeat):
        say(f"demo {i + 1}/{repeat}: labtools run portfolio all --duration 10")
        start, began = time.monotonic(), time.time()
        proc = subprocess.run([LABTOOLS, "run", "portfolio", "all", "--duration", "10", "--json",
                               "--results", str(work / f"demo-{i}.sqlite")],
                              cwd=str(ROOT), capture_output=True, text=True, check=False)
        wall = time.monotonic() - start
        if proc.returncode != 0:
            raise RuntimeError(f"the demo failed: {proc.stderr[-600:]}")
        runs.append({"wall_s": wall, "result": json.loads(proc.stdout),
                     "where": where_the_time_went(work / f"demo-{i}.sqlite", began, wall),
                     "log": proc.stderr[-4000:]})
    where = {key: spread([r["where"][key] for r in runs]) for key in runs[0]["where"]}
    return {"wall_s": spread([r["wall_s"] for r in runs]), "where_s": where,
            "kit_ratios": kit_ratios(runs), "runs": runs}


def where_the_time_went(db: Path, began: float, wall_s: float) -> Dict[str, float]:
    """Seconds of one demo run: before the first measurement (VM boot, imports, lab start
    and calibration), tools measuring (concurrent flows counted once), between
    measurements (servers, parsing, judging, saving), after the last one."""
    import sqlite3
    from datetime import datetime

    with sqlite3.connect(str(db)) as conn:
        rows = conn.execute("SELECT started_at, finished_at FROM runs ORDER BY started_at")
        spans = sorted({(datetime.fromisoformat(a).timestamp(),
                         datetime.fromisoformat(b).timestamp()) for a, b in rows})
    measuring, reach = 0.0, float("-inf")
    for start, end in spans:  # the union of the runs' intervals
        measuring += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    first, last = spans[0][0], max(end for _, end in spans)
    return {"before_first_s": first - began, "measuring_s": measuring,
            "between_s": (last - first) - measuring, "after_last_s": began + wall_s - last,
            "runs": float(len(spans))}


#: the kit's figure -> (case, verdict metric) whose measured / expected it is
KIT_FIGURES = {
    "min RTT / expected": ("path", "rtt_min"),
    "receiver goodput (warm-up left out) / ceiling": ("path", "receiver_rate"),
    "Jain's index of the multiplexing cases": ("mux", "Jain's index"),
    "UDP capacity estimate / expected": ("udp", "capacity estimate"),
}


def kit_ratios(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    out = {}
    for figure, (case, metric) in KIT_FIGURES.items():
        values = []
        for run in runs:
            for c in run["result"]["cases"]:
                if c["case"] != case:
                    continue
                for row in c["rows"]:
                    same = (row["metric"].startswith(metric) if "Jain" in metric
                            else row["metric"] == metric)
                    if same and row.get("measured") is not None:
                        values.append(row["measured"] if "Jain" in metric
                                      else row["measured"] / row["expected"])
        out[figure] = spread(values)
    return out


def part_demo(args: argparse.Namespace) -> Dict[str, Any]:
    return {"demo": demo(args.repeat)}


def part_naive(args: argparse.Namespace) -> Dict[str, Any]:
    in_lab_vm([PY, "benchmarks/naive.py", "--repeat", str(args.repeat),
               "--out", str(RESULTS / "naive.json")])
    return {"naive": json.loads((RESULTS / "naive.json").read_text())}


def part_startup(args: argparse.Namespace) -> Dict[str, Any]:
    in_lab_vm([PY, "benchmarks/startup.py", "--repeat", str(args.repeat),
               "--out", str(RESULTS / "startup.json")])
    return {"startup": json.loads((RESULTS / "startup.json").read_text())}


def part_scale(args: argparse.Namespace) -> Dict[str, Any]:
    say("scale: natively")
    subprocess.run([PY, "benchmarks/scale.py", "--repeat", str(args.repeat), "--mininet-max",
                    "1000", "--out", str(RESULTS / "scale-native.json")], cwd=str(ROOT),
                   check=True)
    return {"scale_native": json.loads((RESULTS / "scale-native.json").read_text())}


def part_scale_vm(args: argparse.Namespace) -> Dict[str, Any]:
    """The scale part inside the lab VM (about an hour under software emulation: a part of
    its own, so a run can leave it out and keep its last results)."""
    out: Dict[str, Any] = {  # both VM keys always set: none of an earlier run's is kept
        "scale_vm": None, "scale_vm_failed": None}
    if needs_vm():
        vm_out = RESULTS / "scale-vm.json"
        vm_out.unlink(missing_ok=True)
        try:
            in_lab_vm([PY, "benchmarks/scale.py", "--repeat", "1", "--sizes", args.vm_sizes,
                       "--out", str(vm_out)])
        except subprocess.CalledProcessError as err:  # the sizes done so far are kept
            out["scale_vm_failed"] = str(err)
        if vm_out.is_file():
            out["scale_vm"] = json.loads(vm_out.read_text())
    return out


def part_overhead(args: argparse.Namespace) -> Dict[str, Any]:
    subprocess.run([PY, "benchmarks/simpleperf_vs_iperf3.py", "--time", "5", "--repeat",
                    str(args.repeat), "--paced"], cwd=str(ROOT), check=True)
    return {"overhead": json.loads((RESULTS / "simpleperf_vs_iperf3.json").read_text())}


def part_class(args: argparse.Namespace) -> Dict[str, Any]:
    """Students' labs at once (natively, no netem needed) and the course hub (Docker)."""
    subprocess.run([PY, "benchmarks/classroom.py", "--out", str(RESULTS / "classroom.json")],
                   cwd=str(ROOT), check=True)
    return {"classroom": json.loads((RESULTS / "classroom.json").read_text())}


def part_grading(args: argparse.Namespace) -> Dict[str, Any]:
    """A class of 100 autograded serially and several at once, against nbgrader's floor."""
    subprocess.run([PY, "benchmarks/grading.py", "--out", str(RESULTS / "grading.json")],
                   cwd=str(ROOT), check=True)
    return {"grading": json.loads((RESULTS / "grading.json").read_text())}


def part_labs(args: argparse.Namespace) -> Dict[str, Any]:
    """Each real lab's cost while it measures, against the class part's star lab."""
    subprocess.run([PY, "benchmarks/labcost.py", "--out", str(RESULTS / "labcost.json")],
                   cwd=str(ROOT), check=True)
    return {"labcost": json.loads((RESULTS / "labcost.json").read_text())}


#: part name -> what runs it (each returns the keys it adds to bench.json)
PART_RUNNERS: Dict[str, Callable[[argparse.Namespace], Dict[str, Any]]] = {
    "demo": part_demo, "naive": part_naive, "startup": part_startup, "scale": part_scale,
    "scale-vm": part_scale_vm, "overhead": part_overhead, "class": part_class,
    "grading": part_grading, "labs": part_labs,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(PARTS))
    parser.add_argument("--vm-sizes", default="10,100,500,1000",
                        help="host counts of the scale-vm part")
    args = parser.parse_args()
    only = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(only) - set(PARTS))
    if unknown:
        print(f"bench: unknown part(s) {', '.join(unknown)}; parts: {', '.join(PARTS)}",
              file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("bench: run as root (networks need it)", file=sys.stderr)
        return 1
    out_file = RESULTS / "bench.json"
    data: Dict[str, Any] = json.loads(out_file.read_text()) if out_file.is_file() else {}
    data["machine"] = machine_info()
    data["vm_for_netem"] = needs_vm()
    data["failed"] = {}
    data["ran"] = only
    data.setdefault("part_s", {})
    began = time.monotonic()
    for part in PARTS:
        if part not in only:
            continue
        part_began = time.monotonic()
        try:
            data.update(PART_RUNNERS[part](args))
        except (RuntimeError, OSError, ValueError, subprocess.CalledProcessError) as err:
            say(f"{part}: failed: {err}")
            data["failed"][part] = str(err)[-600:]
        data["part_s"][part] = round(time.monotonic() - part_began)
        data.setdefault("part_run", {})[part] = {  # parts not run keep their own date
            "date": data["machine"]["date"], "commit": data["machine"]["commit"]}
        write_json(out_file, data)  # every finished part is kept, whatever comes next
    from labtools.lab.calibration import last_calibration

    machine = last_calibration()
    data["calibration"] = None if machine is None else machine.as_dict()
    data["took_s"] = round(time.monotonic() - began)
    write_json(out_file, data)
    from report import write_report

    write_report(data, ROOT / "BENCHMARKS.md")
    if data.get("classroom"):
        from classroom import insert_section, report_lines

        insert_section(ROOT / "BENCHMARKS.md", report_lines(data["classroom"]))
    if data.get("grading"):
        from classroom import insert_section
        from grading import report_lines as grading_lines

        insert_section(ROOT / "BENCHMARKS.md", grading_lines(data["grading"]))
    if data.get("labcost"):
        from labcost import report_lines as labcost_lines
        from labcost import write_section

        write_section(ROOT / "BENCHMARKS.md", labcost_lines(data["labcost"]))
    say(f"wrote {out_file} and BENCHMARKS.md in {data['took_s']} s")
    return 1 if data["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
