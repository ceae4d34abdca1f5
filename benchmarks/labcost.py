"""Benchmark: what each real lab costs one student while it measures, against the star lab
the class part sizes a class with.

For the star lab of benchmarks/classroom.py (``star,hosts=3,bw_mbps=50``: start, a ping of 5
echoes, a 2 s TCP transfer) and then for each solution notebook (executed top to bottom with
nbclient, as the notebook tests do: its network built, measured and stopped by the
notebook), one after the other on an otherwise idle machine:

- wall seconds;
- CPU seconds of the whole machine (``/proc/stat``: user, nice, system, irq and softirq),
  less what the idle machine used in as long (measured for ``IDLE_S`` first): the kernel
  process, the tools, and the kernel's own packet forwarding and shaping, which a per-process
  figure would miss;
- memory: the largest drop of ``MemAvailable`` below its level before (sampled every 0.5 s).

Where this kernel has no netem the whole run happens in the lab VM (``labtools vm``), and the
figures are the guest's: CPU seconds of its emulated CPUs. Their ratios to the star lab, taken
in the same run, are what carries over to a machine with netem. ``--quick`` runs the notebooks
with ``LABTOOLS_QUICK=1`` (shorter pings and UDP runs, as `make test` does): less than a
student's run costs, and said so in the results.

``python benchmarks/labcost.py [--quick] [--only 00,03]``; `make bench`'s part ``labs``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from classroom import LAB_SCRIPT, SPEC, insert_section
from common import RESULTS, ROOT, machine_info, meminfo_mib, say, settled_available_mib, write_json

from labtools.system import procfs

PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").is_dir() else sys.executable
SOLUTIONS = ROOT / "solutions"
#: seconds the idle machine is measured for before the labs (its CPU per second is taken off)
IDLE_S = 10.0
#: how often the memory is sampled (s)
SAMPLE_S = 0.5
#: the columns of ``/proc/stat``'s ``cpu`` line that are work (user nice system idle iowait
#: irq softirq steal: idle and iowait are not)
BUSY_COLUMNS = (0, 1, 2, 5, 6)


def busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent working since it started (``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in BUSY_COLUMNS) / procfs.CLOCK_TICKS_PER_S


class MemoryWatch:
    """The largest drop of ``MemAvailable`` (MiB) below ``before_mib`` while it runs."""

    def __init__(self, before_mib: float) -> None:
        self.before_mib = before_mib
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.peak_mib = max(self.peak_mib, self.before_mib - meminfo_mib("MemAvailable"))

    def __enter__(self) -> "MemoryWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def measured(run: Callable[[], None], idle_cpu_per_s: float) -> Dict[str, Any]:
    """Wall s, CPU s above the idle machine's and peak memory (MiB) of ``run()``."""
    before_mib = settled_available_mib()
    cpu_before = busy_cpu_s()
    began = time.monotonic()
    error: Optional[str] = None
    with MemoryWatch(before_mib) as memory:
        try:
            run()
        except (RuntimeError, OSError, subprocess.SubprocessError) as err:
            error = f"{type(err).__name__}: {err}"[-400:]
    wall_s = time.monotonic() - began
    cpu_s = busy_cpu_s() - cpu_before - idle_cpu_per_s * wall_s
    return {"wall_s": round(wall_s, 1), "cpu_s": round(cpu_s, 1),
            "memory_mib": round(memory.peak_mib, 1), "error": error}


def star_lab() -> None:
    """The class part's lab: started, then its ping and TCP transfer, then stopped."""
    done = subprocess.run([PY, "-c", LAB_SCRIPT, tempfile.mkdtemp(prefix="labcost-")],
                          input="\n", capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the star lab failed: {done.stderr.strip()[-300:]}")


def notebook_run(name: str) -> Callable[[], None]:
    """Execute solution ``name`` in a folder of its own (its results saved there)."""
    def run() -> None:
        from labtools.errors import LabtoolsError
        from labtools.teach import notebook_files

        folder = Path(tempfile.mkdtemp(prefix="labcost-"))
        shutil.copy(SOLUTIONS / name, folder / name)
        try:
            notebook_files.execute(folder / name, cwd=folder)
        except LabtoolsError as err:
            raise RuntimeError(str(err)) from err
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return run


def measure_all(only: List[str], save: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    """The idle machine, the star lab, then each chosen solution notebook (here); ``save``
    is called with the figures so far after each one (a run stopped keeps them)."""
    from labtools.teach.notebook_files import notebook_names

    os.environ.setdefault("MPLBACKEND", "agg")
    os.environ.setdefault("MPLCONFIGDIR", str(ROOT / ".cache" / "matplotlib"))
    cpu_before = busy_cpu_s()
    time.sleep(IDLE_S)
    idle = (busy_cpu_s() - cpu_before) / IDLE_S
    say(f"labs: the idle machine works {idle:.3f} CPU s a second")
    out: Dict[str, Any] = {"idle_cpu_per_s": round(idle, 3), "labs": {}}
    say(f"labs: the star lab ({SPEC})")
    out["star"] = measured(star_lab, idle)
    save(out)
    for name in notebook_names(SOLUTIONS):
        if only and name[:2] not in only:
            continue
        say(f"labs: {name}")
        out["labs"][name] = measured(notebook_run(name), idle)
        say(f"labs: {name}: {out['labs'][name]}")
        save(out)
    return out


def report_lines(data: Dict[str, Any]) -> List[str]:
    """The BENCHMARKS.md section of one run."""
    star = data["star"]
    where = "in the lab VM (software emulation; the guest's CPU seconds)" if data["in_vm"] \
        else "natively"
    quick = ("with `LABTOOLS_QUICK=1` (shorter pings and UDP runs than a student's: a lower "
             "bound)") if data["quick"] else "as students run them"
    lines = ["## What each lab costs a student while it measures", "",
             f"Each solution notebook executed top to bottom {quick}, one at a time, {where}; "
             f"the star lab is the class part's (`{SPEC}`, a ping and a 2 s transfer). CPU is "
             "the whole machine's (the kernel's forwarding and shaping included) less the "
             f"idle machine's ({data['idle_cpu_per_s']:.2f} CPU s a second); memory the "
             "largest drop of MemAvailable (benchmarks/labcost.py).", "",
             "| lab | wall s | CPU s | x the star lab's CPU | memory (MiB) |",
             "|---|---|---|---|---|",
             f"| the star lab | {star['wall_s']:.0f} | {star['cpu_s']:.1f} | 1.0 | "
             f"{star['memory_mib']:.0f} |"]
    for name, run in data["labs"].items():
        ratio = run["cpu_s"] / star["cpu_s"] if star["cpu_s"] > 0 else float("nan")
        failed = f" (failed: {run['error']})" if run["error"] else ""
        lines.append(f"| {name}{failed} | {run['wall_s']:.0f} | {run['cpu_s']:.1f} | "
                     f"{ratio:.1f} | {run['memory_mib']:.0f} |")
    done = [r for r in data["labs"].values() if not r["error"]]
    if done and star["cpu_s"] > 0:
        total = sum(r["cpu_s"] for r in done)
        lines += ["", f"The {len(done)} labs together: {total:.0f} CPU s, "
                  f"{total / star['cpu_s']:.0f} times the star lab's; the largest memory "
                  f"{max(r['memory_mib'] for r in done):.0f} MiB."]
    return lines


def write_section(path: Path, lines: List[str]) -> None:
    """This part's section in BENCHMARKS.md: an earlier run's replaced, else inserted."""
    text = path.read_text()
    heading = lines[0]
    if heading in text:
        begin = text.index(heading)
        end = text.find("\n## ", begin + len(heading))
        path.write_text(text[:begin] + text[end + 1:] if end >= 0 else text[:begin])
    insert_section(path, lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="LABTOOLS_QUICK=1 notebooks")
    parser.add_argument("--only", default="", help="notebook numbers, e.g. 00,03")
    parser.add_argument("--out", type=Path, default=RESULTS / "labcost.json")
    parser.add_argument("--here", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    if args.quick:
        os.environ["LABTOOLS_QUICK"] = "1"
    from labtools.lab.placement import runs_natively

    if args.here or runs_natively():
        machine = machine_info()
        head = {"machine": machine, "quick": args.quick,
                "in_vm": machine["emulation"] != "native"}
        measure_all(only, lambda figures: write_json(args.out, {**head, **figures}))
        if args.here:  # inside the lab VM: the host writes the section
            return 0
    else:
        argv = [PY, str(Path(__file__).resolve()), "--here", "--out", str(args.out)]
        argv += ["--quick"] if args.quick else []
        argv += ["--only", args.only] if only else []
        env = ["--env", "LABTOOLS_QUICK"] if args.quick else []
        done = subprocess.run([str(Path(PY).parent / "labtools"), "vm", *env, "--timeout",
                               "7200", "--", *argv], cwd=str(ROOT), check=False)
        if done.returncode != 0:
            return done.returncode
    write_section(ROOT / "BENCHMARKS.md", report_lines(json.loads(args.out.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
