"""What ``labtools run`` loads before its lab starts: not pandas (about 20 s under software
emulation, where every Python module costs tens of milliseconds): the command boots the VM,
and the lab builds its network, without it."""

from __future__ import annotations

import subprocess
import sys

#: what ``labtools run`` imports before its lab starts
BEFORE_THE_LAB = ("labtools.commands.run_cmd", "labtools.lab.session", "labtools.lab.cases",
                  "labtools.lab.probes", "labtools.lab.calibration", "labtools.lab.network",
                  "labtools.results.store", "labtools.model.catalog", "labtools.system.vm")


def _python(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_starting_a_lab_needs_no_pandas():
    imports = "; ".join(f"import {m}" for m in BEFORE_THE_LAB)
    out = _python(f"import sys; {imports}; print('pandas' in sys.modules)")
    assert out == "False"


def test_the_store_loads_no_http_client_off_a_hub():
    """The course's record posts with urllib only on a hub: a lab's store does not pay for
    http.client and ssl (hundreds of milliseconds under emulation) where it never posts."""
    out = _python("import sys; import labtools.results.store; "
                  "print('urllib.request' in sys.modules, 'http.client' in sys.modules)")
    assert out == "False False"


#: measure, judge and save as a lab run does, from captured outputs of the real tools
#: (tests/fixtures: ping -D, iperf3 -J TCP with and without --omit, iperf 2 UDP client)
MEASURE_JUDGE_SAVE = """
import sys, tempfile
from pathlib import Path
from labtools.judge.capacity import judge_capacity
from labtools.judge.measurement import JudgeContext, judge_parsed
from labtools.judge.shares import judge_flows
from labtools.model.catalog import load_topology
from labtools.model.fairness import parse_flows
from labtools.results.records import GroupRecord, RunRecord
from labtools.results.store import ResultStore
from labtools.tools.parsers import parse

fixtures = Path("tests/fixtures")
topo = load_topology("portfolio")
store = ResultStore(Path(tempfile.mkdtemp()) / "r.sqlite")
context = JudgeContext(warmup_s=2.0)
ping = judge_parsed(parse("ping", (fixtures / "ping/timestamps.txt").read_text()),
                    topo, "h1", "h4", context)
tcp = [parse("iperf3", (fixtures / f"iperf3/{n}.json").read_text())
       for n in ("tcp_p1", "tcp_omit")]
flows = judge_flows(topo, parse_flows("h1:h4,h2:h5"), tcp, context)
udp = judge_parsed(parse("iperf", (fixtures / "iperf2/udp_interval.txt").read_text()),
                   topo, "h1", "h4", context)
search = judge_capacity(topo, "h1", "h4", [udp, udp], ["rise", "bisect"], [10.0, 20.0],
                        context)
for m in [ping, udp, *flows.measurements]:
    store.save(RunRecord.from_measurement(m))
for kind, result in (("flows", flows), ("capacity", search)):
    store.save_group(GroupRecord(kind + "-1", kind, {}, result.summary, result.verdicts))
print(len(store.query("SELECT id FROM runs")), "pandas" in sys.modules)
"""


def test_measuring_judging_and_saving_need_no_pandas():
    out = _python(MEASURE_JUDGE_SAVE)
    assert out == "4 False"
