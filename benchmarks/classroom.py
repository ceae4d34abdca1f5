"""Benchmark: a class on one machine. How many students' labs start and run at once, what
each costs, and what a course hub adds; what a class of 100 then needs.

1. **Labs natively, in user namespaces** (no root, no container): for each size N, N
   ordinary users (user ids of their own, through ``setpriv``) each start a lab of
   ``star,hosts=3,bw_mbps=50`` (no delay: it runs where the kernel has no netem) at the
   same moment, then all measure at the same moment: a ping (5 echoes 0.2 s apart) and a
   2 s TCP transfer (iperf3), as tests/support/sandbox_lab.py does for the kit's tests. Per size:
   each lab's start (process start to running network, imports included), the ping and
   TCP results, the memory the N labs take (``MemAvailable`` before and while they run)
   and the CPU time the measuring took. A size whose labs fail or take more than
   ``--limit`` seconds to start ends the series.
2. **The course hub** (scripts/hub.sh, Docker, the kit's image): for each size K, K
   students' servers spawned at once through the hub's REST API (the hub's own figure,
   "took X seconds to start"), then each runs the same lab in its container at the same
   moment, in a Python that has imported what a lab notebook's kernel imports (pandas,
   matplotlib, ipywidgets, the kit's notebook helpers); the memory of each server
   (``docker stats``) idle and with its lab.

Needs root (user ids, Docker). ``python benchmarks/classroom.py --sizes 1,5,10,20,40
--hub-sizes 1,5,10 --out benchmarks/results/classroom.json``; `make bench` runs it as the
part ``class``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from common import RESULTS, ROOT, say, settled_available_mib, spread, write_json

from labtools.system import procfs

sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "deploy" / "hub"))

PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").is_dir() else sys.executable
SPEC = "star,hosts=3,bw_mbps=50"
#: the ceiling of a TCP transfer on a 50 Mbit/s link (1448 payload bytes per 1514-byte frame)
CEILING_MBPS = 50 * 1448 / 1514
FIRST_UID = 30001
WORK = Path("/tmp/labtools-classroom")
LIMIT_S = 120.0
LAB_SCRIPT = """
import json, sys, time
from labtools.lab import probes
from labtools.lab.session import LabSession
began = time.monotonic()
with LabSession("SPEC", results=sys.argv[1], calibrate=False) as lab:
    print(json.dumps({"started_s": time.monotonic() - began}), flush=True)
    sys.stdin.readline()
    ping = probes.ping(lab, "h1", "h2", count=5, interval_s=0.2)
    tcp = probes.iperf3(lab, "h1", "h3", duration_s=2, omit_s=0)
    print(json.dumps({"received": ping.summary.received, "min_ms": ping.summary.min_ms,
                      "avg_ms": ping.summary.avg_ms,
                      "receiver_mbps": tcp.summary.receiver_mbps}), flush=True)
""".replace("SPEC", SPEC)
#: in a hub's server the lab runs in a notebook's kernel, which has imported what a lab
#: notebook imports (tables, plots, widgets): the same lab with those imports first
NOTEBOOK_LAB_SCRIPT = ("import pandas, matplotlib, ipywidgets, ipykernel\n"
                       "matplotlib.use('agg')\nimport matplotlib.pyplot\n"
                       "import labtools.teach.notebook, labtools.teach.plots\n" + LAB_SCRIPT)


CGROUP_V1 = Path("/sys/fs/cgroup/cpuacct/cpuacct.usage").exists()
CGROUP_ROOT = "labtools-classroom"


class Accounting:
    """A control group of its own for one student's lab (and everything it starts): its
    CPU time and memory alone, whatever else the machine runs. Control groups v1
    (cpuacct and memory) or v2."""

    def __init__(self, name: str) -> None:
        if CGROUP_V1:
            self.dirs = [Path("/sys/fs/cgroup", c, CGROUP_ROOT, name)
                         for c in ("cpuacct", "memory")]
        else:
            self.dirs = [Path("/sys/fs/cgroup", CGROUP_ROOT, name)]
        for folder in self.dirs:
            folder.mkdir(parents=True, exist_ok=True)

    def enter(self) -> None:
        """Put the calling process in the group (a ``preexec_fn``)."""
        for folder in self.dirs:
            (folder / "cgroup.procs").write_text(str(os.getpid()))

    def cpu_s(self) -> float:
        """CPU seconds the group has used."""
        if CGROUP_V1:
            return int((self.dirs[0] / "cpuacct.usage").read_text()) / 1e9
        stat = (self.dirs[0] / "cpu.stat").read_text()
        return int(re.search(r"usage_usec (\d+)", stat).group(1)) / 1e6  # type: ignore[union-attr]

    def memory_mib(self) -> Optional[float]:
        """Memory the group holds (its processes and the kernel's for it), page cache left
        out; None where the memory controller is not there."""
        try:
            if CGROUP_V1:
                usage = int((self.dirs[1] / "memory.usage_in_bytes").read_text())
                stat = (self.dirs[1] / "memory.stat").read_text()
                cache = int(re.search(r"^total_cache (\d+)", stat, re.M).group(1))  # type: ignore[union-attr]
                return (usage - cache) / 2 ** 20
            stat = (self.dirs[0] / "memory.stat").read_text()
            usage = int((self.dirs[0] / "memory.current").read_text())
            return (usage - int(re.search(r"^file (\d+)", stat, re.M).group(1))) / 2 ** 20  # type: ignore[union-attr]
        except (OSError, AttributeError):
            return None

    def remove(self) -> None:
        for folder in self.dirs:
            for _ in range(20):
                try:
                    folder.rmdir()
                    break
                except OSError:  # its last processes are still exiting
                    time.sleep(0.5)


def _line(proc: "subprocess.Popen[str]", timeout_s: float) -> Optional[Dict[str, Any]]:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    if not ready:
        return None
    line = proc.stdout.readline()
    try:
        return json.loads(line) if line.strip() else None
    except ValueError:
        return None


def native_size(n: int, limit_s: float) -> Dict[str, Any]:
    """N labs of N ordinary users started at once, then measuring at once."""
    WORK.mkdir(mode=0o1777, exist_ok=True)
    os.chmod(WORK, 0o1777)
    procs, groups = [], []
    began = time.monotonic()
    for i in range(n):
        uid = FIRST_UID + i
        home = WORK / f"home-{uid}"
        home.mkdir(exist_ok=True)
        os.chown(home, uid, uid)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
               "PYTHONPATH": str(ROOT)}  # the kit of this checkout, whatever the venv has
        groups.append(Accounting(f"lab-{uid}"))
        procs.append(subprocess.Popen(
            ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", PY, "-c",
             LAB_SCRIPT, str(home / "results.sqlite")], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=home, env=env,
            preexec_fn=groups[-1].enter))
    started = []
    for p in procs:
        line = _line(p, max(1.0, limit_s + 60 - (time.monotonic() - began)))
        started.append(None if line is None else {**line, "wall_s": time.monotonic() - began})
    out: Dict[str, Any] = {"n": n, "all_started_s": round(time.monotonic() - began, 2)}
    try:
        ok = [s for s in started if s]
        out["network_start_s"] = spread([s["started_s"] for s in ok])
        out["start_from_process_s"] = spread([s["wall_s"] for s in ok])
        out["started"] = len(ok)
        if len(ok) < n:
            return out
        time.sleep(2)
        out["memory_mib"] = spread([g.memory_mib() for g in groups], 1)
        out["start_cpu_s"] = spread([g.cpu_s() for g in groups])
        cpu = [g.cpu_s() for g in groups]
        t0 = time.monotonic()
        for p in procs:  # all measure at once
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [_line(p, 120) for p in procs]
        out["measure_wall_s"] = round(time.monotonic() - t0, 2)
        out["measure_cpu_s"] = spread([g.cpu_s() - c for g, c in zip(groups, cpu)])
        out["memory_measuring_mib"] = spread([g.memory_mib() for g in groups], 1)
        done = [r for r in results if r]
        out["measured"] = len(done)
        out["pings_received"] = spread([r["received"] for r in done])
        out["ping_min_ms"] = spread([r["min_ms"] for r in done])
        out["ping_avg_ms"] = spread([r["avg_ms"] for r in done])
        out["tcp_mbps"] = spread([r["receiver_mbps"] for r in done])
        out["tcp_of_ceiling"] = spread([r["receiver_mbps"] / CEILING_MBPS for r in done])
    finally:
        for p in procs:
            if p.stdin:
                p.stdin.close()
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for g in groups:
            g.remove()
    return out


def native(sizes: List[int], limit_s: float) -> Dict[str, Any]:
    """Every size, until one fails or starts too slowly (each lab's folder made anew)."""
    import shutil

    shutil.rmtree(WORK, ignore_errors=True)
    rows: List[Dict[str, Any]] = []
    for n in sizes:
        say(f"class: {n} lab(s) natively, at once")
        row = native_size(n, limit_s)
        rows.append(row)
        if row.get("measured", 0) < n or row["all_started_s"] > limit_s:
            say(f"class: {n} labs did not all start and measure within {limit_s:.0f} s: "
                "larger sizes not tried")
            break
    for parent in (Path("/sys/fs/cgroup", c, CGROUP_ROOT) for c in ("cpuacct", "memory", "")):
        try:
            parent.rmdir()  # the labs' groups are gone: their parent goes too
        except OSError:
            pass
    shutil.rmtree(WORK, ignore_errors=True)
    return {"spec": SPEC, "limit_s": limit_s, "sizes": rows,
            "memory_available_mib": round(settled_available_mib()), "cores": os.cpu_count()}


# --- the hub ----------------------------------------------------------------------------

def _hub_session(url: str, cafile: str, user: str, password: str) -> Any:
    """Log in as ``user`` with the login form (its _xsrf field), then ask for an API token
    as the token page does; the token."""
    import http.cookiejar
    import ssl
    import urllib.parse
    import urllib.request

    context = ssl.create_default_context(cafile=cafile)
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar),
                                         urllib.request.HTTPSHandler(context=context))
    page = opener.open(f"{url}/hub/login", timeout=60).read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    form = urllib.parse.urlencode({"username": user, "password": password, "_xsrf": xsrf})
    opener.open(f"{url}/hub/login", data=form.encode(), timeout=60)
    cookie_xsrf = next(c.value or "" for c in jar if c.name.endswith("_xsrf"))
    request = urllib.request.Request(
        f"{url}/hub/api/users/{user}/tokens", data=json.dumps({"note": "bench"}).encode(),
        method="POST", headers={"X-XSRFToken": cookie_xsrf, "Content-Type": "application/json"})
    return json.loads(opener.open(request, timeout=60).read())["token"], context


def _api(url: str, token: str, context: Any, method: str = "GET", body: Any = None) -> Any:
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=600, context=context) as reply:
        raw = reply.read()
    return json.loads(raw) if raw else None


def _memory_mib(names: List[str]) -> Dict[str, float]:
    from hub_machine import docker

    out = docker("stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}", *names)
    found = {}
    for line in out.splitlines():
        name, usage = line.split(" ", 1)
        value, unit = re.match(r"([\d.]+)\s*([KMG]i?B)", usage).groups()  # type: ignore[union-attr]
        found[name] = float(value) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}.get(unit, 1)
    return found


def hub(sizes: List[int]) -> Dict[str, Any]:
    """Spawn waves of K servers through a real hub; each then runs the lab."""
    import tempfile

    from hub_machine import DockerDaemon, Hub, course_settings, localhost_names

    total = sum(sizes)
    students = [f"s{i:03d}" for i in range(1, total + 1)]
    rows: List[Dict[str, Any]] = []
    log_dir = ROOT / "results" / "classroom"  # logs: not kept with the figures
    with tempfile.TemporaryDirectory() as folder, localhost_names(), \
            DockerDaemon(log_dir / "dockerd.log"):
        if docker_answers_image("labtools-lab:latest"):
            say("class: the image labtools-lab:latest is there: used as it is")
        else:
            subprocess.run(["bash", str(ROOT / "scripts" / "image.sh")], check=True,
                           capture_output=True)
        info = course_settings(Path(folder), "classbench", "teacher", students,
                               mem_limit="2G", cpu_limit=1.0)
        settings = Path(info["settings"])
        settings.write_text(settings.read_text().replace("[course]\n",
                                                          "[course]\nadmins = [\"bench\"]\n"))
        with Hub(settings, log_dir / "hub.log") as running:
            token, context = _hub_session(info["url"], info["cafile"], "bench",
                                          running.password)
            api = f"{info['url']}/hub/api"
            given = 0
            for k in sizes:
                wave = students[given:given + k]
                given += k
                say(f"class: {k} server(s) spawned at once through the hub")
                rows.append(_hub_wave(api, token, context, wave, running))
            hub_mib = _tree_rss_mib(running.proc.pid) if running.proc else None
            for name in students[:given]:
                _api(f"{api}/users/{name}/server", token, context, "DELETE")
    return {"spec": SPEC, "mem_limit": "2G", "cpu_limit": 1.0, "waves": rows,
            "hub_processes_mib": hub_mib, "students_seen": given}


def _tree_rss_mib(pid: int) -> float:
    """Resident memory of a process and all its descendants (the hub, its proxy and its
    idle culler, under scripts/hub.sh), MiB."""
    children: Dict[int, List[int]] = {}
    rss: Dict[int, int] = {}
    for each in procfs.pids():
        fields, status = procfs.stat_fields(each), procfs.read_text(each, "status")
        if fields is None or status is None:
            continue  # gone meanwhile
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        rss[each] = int(found.group(1)) if found else 0
        children.setdefault(int(fields[1]), []).append(each)
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0)
        todo += children.get(current, [])
    return round(total / 1024, 1)


def docker_answers_image(image: str) -> bool:
    """Is ``image`` in Docker's store already (the benchmark then measures it as it is)?"""
    from hub_machine import DOCKER

    return subprocess.run([DOCKER, "image", "inspect", image], capture_output=True,
                          check=False).returncode == 0


def _hub_wave(api: str, token: str, context: Any, wave: List[str], running: Any) -> Dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    from hub_machine import DOCKER

    began = time.monotonic()
    # every request at once: the hub answers a spawn request only once the server has
    # started or 10 s have passed (slow_spawn_timeout), so one after the other would stagger
    with ThreadPoolExecutor(len(wave)) as pool:
        list(pool.map(lambda name: _api(f"{api}/users/{name}/server", token, context, "POST"),
                      wave))
    deadline = time.monotonic() + 600
    pending = set(wave)
    while pending and time.monotonic() < deadline:
        for name in list(pending):
            if _api(f"{api}/users/{name}", token, context)["servers"].get("", {}).get("ready"):
                pending.discard(name)
        time.sleep(1)
    wall = time.monotonic() - began
    took = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"User (s\d+) took ([\d.]+) seconds to start", running.text())}
    containers = [f"labhub-classbench_u-{name}" for name in wave]
    time.sleep(5)
    idle = _memory_mib(containers)
    labs = [subprocess.Popen([DOCKER, "exec", "-i", c, "python", "-c", NOTEBOOK_LAB_SCRIPT,
                              "/tmp/results.sqlite"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for c in containers]
    started = [_line(p, 180) for p in labs]
    with_lab = _memory_mib(containers)
    for p, s in zip(labs, started):
        if s is not None and p.stdin is not None:
            p.stdin.write("go\n")
            p.stdin.flush()
    measured = [_line(p, 180) if s is not None else None for p, s in zip(labs, started)]
    failures = []
    for p in labs:
        if p.stdin:
            p.stdin.close()
        p.wait(60)
        if p.returncode:
            failures.append((p.stderr.read() if p.stderr else "").strip()[-300:])
    done = [m for m in measured if m]
    return {
        "k": len(wave), "not_ready": sorted(pending), "all_ready_s": round(wall, 1),
        "lab_failures": failures,
        "spawn_s": spread([took[n] for n in wave if n in took]),
        "server_idle_mib": spread(list(idle.values())),
        "server_with_lab_mib": spread(list(with_lab.values())),
        "lab_start_s": spread([s["started_s"] for s in started if s]),
        "measured": len(done),
        "tcp_of_ceiling": spread([m["receiver_mbps"] / CEILING_MBPS for m in done]),
        "pings_received": spread([m["received"] for m in done]),
    }


#: the server a class of 100 is sized on: a common cloud or rack machine
SERVER_CORES = 8
SERVER_MEMORY_GIB = 32
#: memory kept for the system, Docker and the page cache on each server
RESERVED_GIB = 2


#: a round of measuring may take this many times one lab's alone and still count as "at once"
AT_ONCE_FACTOR = 2.0


def _largest_fine(rows: List[Dict[str, Any]], count: str, size: str) -> Optional[Dict[str, Any]]:
    """The largest size whose labs all measured well (5/5 pings, TCP at 90 % of the
    ceiling) and, natively, at once: the round within :data:`AT_ONCE_FACTOR` times the
    smallest size's (labs that queue for the CPU still measure well, one after another)."""
    walls = [r["measure_wall_s"] for r in rows if r.get("measure_wall_s")]
    fine = [r for r in rows if r.get(count) == r[size]
            and (r.get("pings_received") or {}).get("min") == 5
            and ((r.get("tcp_of_ceiling") or {}).get("min") or 0) >= 0.9
            and (not walls or "measure_wall_s" not in r
                 or r["measure_wall_s"] <= AT_ONCE_FACTOR * walls[0])]
    return max(fine, key=lambda r: r[size]) if fine else None


def sizing(data: Dict[str, Any], students: int = 100) -> Dict[str, Any]:
    """What ``students`` need, by arithmetic from the measured figures (see the report)."""
    import math

    native_rows = data.get("native", {}).get("sizes", [])
    waves = (data.get("hub") or {}).get("waves", [])
    best = _largest_fine(native_rows, "measured", "n")
    wave = _largest_fine(waves, "measured", "k")
    cores = data.get("native", {}).get("cores") or os.cpu_count() or 1
    out: Dict[str, Any] = {"students": students}
    if best:
        # labs measuring at once per core, without losing fidelity (a lower bound when
        # the largest size tried was fine)
        per_core = best["n"] / cores
        out["labs_per_core_at_once"] = round(per_core, 1)
        out["cores_all_measuring"] = math.ceil(students / per_core)
        out["native_lab_mib"] = best["memory_mib"]["median"]
    if wave:
        per_student = wave["server_with_lab_mib"]["median"]
        hub_mib = (data.get("hub") or {}).get("hub_processes_mib") or 0
        total_gib = (students * per_student + hub_mib) / 1024
        out["server_with_lab_mib"] = per_student
        out["memory_gib"] = round(total_gib, 1)
        out["spawn_s"] = wave["spawn_s"]["median"]
        out["spawn_wave"] = wave["k"]
        if "cores_all_measuring" in out:
            out["servers"] = max(math.ceil(out["cores_all_measuring"] / SERVER_CORES),
                                 math.ceil(total_gib / (SERVER_MEMORY_GIB - RESERVED_GIB)))
            out["server"] = f"{SERVER_CORES} cores, {SERVER_MEMORY_GIB} GiB"
    return out


def report_lines(data: Dict[str, Any]) -> List[str]:
    """The BENCHMARKS.md section of this part."""
    from common import fmt

    native_rows = data.get("native", {}).get("sizes", [])
    lines = ["## A class on one machine: labs at once, and the course hub", "",
             f"Each student's lab is `{SPEC}` (no delay: it runs where the kernel has no "
             "netem), started by an ordinary user in user namespaces of their own; every lab "
             "starts at the same moment, then every lab measures at the same moment: a ping "
             "(5 echoes 0.2 s apart) and a 2 s TCP transfer (benchmarks/classroom.py). "
             "Memory and CPU are each lab's own (a control group per lab): the kernel's "
             "packet forwarding is not in the CPU figure. The machine's load average was "
             f"{data.get('load_average', ['?', '?'])[0]} at the start of this part and "
             f"{data.get('load_average', ['?', '?'])[1]} at its end (with 2 cores, anything "
             "above 2 is other work slowing these figures down).", "",
             "| labs at once | all started (s) | network start (s) | from process start (s) "
             "| memory per lab (MiB) | pings received | TCP / ceiling | measuring (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in native_rows:
        lines.append(
            f"| {r['n']} | {r['all_started_s']} | {fmt(r.get('network_start_s', {}))} | "
            f"{fmt(r.get('start_from_process_s', {}))} | {fmt(r.get('memory_mib', {}), '', 1)} "
            f"| {fmt(r.get('pings_received', {}), '', 0)} | {fmt(r.get('tcp_of_ceiling', {}))} "
            f"| {r.get('measure_wall_s', '-')} |")
    hub_data = data.get("hub") or {}
    if hub_data.get("waves"):
        lines += ["", "The course hub (scripts/hub.sh; each server a container of the kit's "
                  f"image, {hub_data['cpu_limit']:g} CPU and {hub_data['mem_limit']} at most): "
                  "students' servers spawned at once through the hub's API, then each runs "
                  "the same lab in a Python that imported what a lab notebook's kernel "
                  "imports. Spawn: the hub's own figure per server.", "",
                  "| servers at once | spawn (s) | all ready (s) | server idle (MiB) "
                  "| server with its lab (MiB) | lab start (s) | TCP / ceiling |",
                  "|---|---|---|---|---|---|---|"]
        for w in hub_data["waves"]:
            lines.append(
                f"| {w['k']} | {fmt(w['spawn_s'], '', 1)} | {w['all_ready_s']} | "
                f"{fmt(w['server_idle_mib'], '', 0)} | {fmt(w['server_with_lab_mib'], '', 0)} "
                f"| {fmt(w['lab_start_s'])} | {fmt(w['tcp_of_ceiling'])} |")
        lines += ["", f"The hub itself (JupyterHub, configurable-http-proxy, the idle culler) "
                  f"held {hub_data.get('hub_processes_mib')} MiB with "
                  f"{hub_data.get('students_seen')} servers."]
    lines += ["", *_sizing_lines(sizing(data)), ""]
    return lines


def _sizing_lines(s: Dict[str, Any]) -> List[str]:
    lines = [f"### What a class of {s['students']} needs (arithmetic from the figures above)", ""]
    if "cores_all_measuring" in s:
        lines.append(f"- CPU: {s['labs_per_core_at_once']} labs measured at once per core "
                     "without losing fidelity (every ping answered, TCP at 90 % of the ceiling "
                     f"or more, the round within {AT_ONCE_FACTOR:g} times one lab's alone; a "
                     "lower bound when the largest size tried was still fine), so "
                     f"{s['students']} students measuring at the same moment need about "
                     f"{s['cores_all_measuring']} cores. Students mostly read and think: the "
                     "moment everyone measures at once is the worst case.")
    if "memory_gib" in s:
        lines.append(f"- Memory: {s['server_with_lab_mib']:.0f} MiB per student (their server "
                     f"with a lab running) and the hub: {s['memory_gib']} GiB for "
                     f"{s['students']}; the servers' limit (2G) is a ceiling, not what they use.")
        lines.append(f"- Spawn: {s['spawn_s']:.0f} s per server when {s['spawn_wave']} start "
                     "at once on this machine; a class arriving at once starts in waves.")
    if "servers" in s:
        lines.append(f"- Servers: {s['servers']} of {s['server']} (the larger of the CPU and "
                     f"the memory figure, {RESERVED_GIB} GiB of each kept for the system); or "
                     "one hub per server, students split between them, or Kubernetes "
                     "(deploy/k8s/).")
    lines.append("- Labs with link delay need netem on the servers' kernel (a stock kernel "
                 "has it; `modprobe sch_netem`); without it each student's kernels run in the "
                 "lab VM inside their server (half the server's memory limit and its cores "
                 "under software emulation, a minute before each kernel answers; the hub "
                 "test's figures are in docs/course-server.md): a fallback, not a way to "
                 "serve a class.")
    return lines


def insert_section(path: Path, lines: List[str],
                   before: str = "## Where the time went") -> None:
    """Put this part's section into BENCHMARKS.md (written by report.py) before ``before``
    (at the end when there is no such heading)."""
    text = path.read_text()
    section = "\n".join(lines).rstrip() + "\n\n"
    at = text.find(before)
    path.write_text(text[:at] + section + text[at:] if at >= 0 else text + "\n" + section)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,5,10,20,40")
    parser.add_argument("--hub-sizes", default="1,5,10")
    parser.add_argument("--limit", type=float, default=LIMIT_S)
    parser.add_argument("--out", type=Path, default=RESULTS / "classroom.json")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    out: Dict[str, Any] = {"native": native([int(s) for s in args.sizes.split(",")],
                                            args.limit)}
    write_json(args.out, out)
    if args.hub_sizes:
        out["hub"] = hub([int(s) for s in args.hub_sizes.split(",")])
    out["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
