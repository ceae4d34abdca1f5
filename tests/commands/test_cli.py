"""The command line contract: keys, numbers, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from labtools.model import expect
from labtools.model.catalog import load_topology
from tests.conftest import FIXTURES, ROOT, run_cli


@pytest.mark.parametrize("src, dst", [("r1", "r2"), ("r2", "r3"), ("r3", "r4"),
                                      ("h1", "h4"), ("h1", "h9"), ("h7", "h9")])
def test_expect_pair_json(portfolio, src, dst):
    proc = run_cli(["expect", "portfolio", src, dst, "--json"])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"path", "rtt_ms", "bottleneck_mbps", "bottleneck_link",
            "tcp_goodput_ceiling_mbps", "bdp_bytes"} <= set(data)
    assert data["rtt_ms"] == pytest.approx(expect.rtt_ms(portfolio, src, dst))
    rate, label = expect.bottleneck(portfolio, src, dst)
    assert (data["bottleneck_mbps"], data["bottleneck_link"]) == (rate, label)
    assert data["tcp_goodput_ceiling_mbps"] == pytest.approx(rate * 1448 / 1514, abs=1e-3)
    assert data["bdp_bytes"] == pytest.approx(rate * 1e6 * data["rtt_ms"] / 1e3 / 8, abs=1)
    assert data["path"][0] == src and data["path"][-1] == dst


def test_expect_pair_text():
    proc = run_cli(["expect", "portfolio", "h1", "h4"])
    assert proc.returncode == 0
    assert "60 ms" in proc.stdout and "30 Mbit/s (L2)" in proc.stdout


@pytest.mark.parametrize("spec, load", [("portfolio", "h2:h5"),
                                         ("portfolio,rate_scale=0.25", "h2:h5"),
                                         ("portfolio", "h2:h9"), ("portfolio", None)])
def test_expect_gives_the_rtt_under_another_flow(spec, load):
    """--load LSRC:LDST: the queue model's RTT of h1 -> h4 while that flow runs, the
    numbers of labtools.model.queues for the same topology."""
    from labtools.model.queues import loaded_rtt

    extra = ["--load", load] if load else []
    proc = run_cli(["expect", spec, "h1", "h4", "--json", *extra])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    ends = load.split(":") if load else (None, None)
    model = loaded_rtt(load_topology(spec), "h1", "h4", *ends).as_dict()
    assert {k: data[k] for k in model} == model
    assert data["load"] == ("h1->h4" if load is None else load.replace(":", "->"))
    text = run_cli(["expect", spec, "h1", "h4", *extra]).stdout
    assert "RTT under a TCP flow" in text and f"{model['loaded_rtt_ms']:g} ms" in text


@pytest.mark.parametrize("args, reason", [
    (["h1", "h4", "--load", "h2"], "--load takes LSRC:LDST"),
    (["h1", "h4", "--load", "h2:h2"], "two different nodes"),
    (["h1", "h4", "--load", "h2:x9"], "unknown node 'x9'"),
    (["--load", "h2:h5"], "--load is for a pair")])
def test_expect_refuses_a_load_it_cannot_place(args, reason):
    proc = run_cli(["expect", "portfolio", *args])
    assert proc.returncode == 2 and reason in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_expect_flows_json():
    proc = run_cli(["expect", "portfolio", "--flows", "h1:h4x2,h2:h5,h3:h6", "--json"])
    assert proc.returncode == 0, proc.stderr
    flows = json.loads(proc.stdout)["flows"]
    assert [(f["src"], f["dst"], f["connections"]) for f in flows] == [
        ("h1", "h4", 2), ("h2", "h5", 1), ("h3", "h6", 1)]
    assert [f["share_mbps"] for f in flows] == [15, 7.5, 7.5]
    assert {f["limited_by"] for f in flows} == {"L2"}


def test_expect_overview_covers_the_five_cases(portfolio):
    from labtools.model.cases import derive_plan
    from labtools.model.catalog import load_cases
    from labtools.model.fairness import max_min_shares, parse_flows

    proc = run_cli(["expect", "portfolio", "--json"])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    plan = derive_plan(portfolio, load_cases("portfolio"))
    for case, pairs in (("link", plan.links), ("path", plan.pairs)):
        got = [(r["path"][0], r["path"][-1], r["rtt_ms"]) for r in data[case]]
        assert got == [(a, b, expect.rtt_ms(portfolio, a, b)) for a, b in pairs]
    for case, scenarios in (("mux", plan.mux), ("parallel", plan.parallel)):
        assert [s["spec"] for s in data[case]] == [",".join(x) for x in scenarios]
        for got, spec in zip(data[case], scenarios):
            want = max_min_shares(portfolio, parse_flows(",".join(spec)))
            assert [f["share_mbps"] for f in got["flows"]] == [w.share_mbps for w in want]
    text = run_cli(["expect", "portfolio"]).stdout
    assert "== path ==" in text and "== parallel: h1:h4x2,h2:h5,h3:h6 ==" in text


def test_other_topologies_and_files(tmp_path):
    proc = run_cli(["expect", "dumbbell,pairs=3,bw_mbps=20,delay_ms=5", "a1", "b1", "--json"])
    data = json.loads(proc.stdout)
    topo = load_topology("dumbbell,pairs=3,bw_mbps=20,delay_ms=5")
    assert data["rtt_ms"] == expect.rtt_ms(topo, "a1", "b1") == 10
    assert data["bottleneck_mbps"] == 20
    spec = tmp_path / "t.json"
    spec.write_text(json.dumps({
        "name": "two", "nodes": [{"name": "h1"}, {"name": "r1", "kind": "router"}, {"name": "h2"}],
        "links": [{"a": "h1", "b": "r1", "bw_mbps": 5, "delay_ms": 3},
                  {"a": "r1", "b": "h2", "bw_mbps": 8, "delay_ms": 4.5}]}))
    data = json.loads(run_cli(["expect", str(spec), "h1", "h2", "--json"]).stdout)
    assert data["rtt_ms"] == 15 and data["bottleneck_mbps"] == 5


@pytest.mark.parametrize("args, words", [
    (["expect", "portfolio", "h1", "h99"], "unknown node 'h99'"),
    (["expect", "nosuch", "h1", "h2"], "unknown topology 'nosuch'"),
    (["expect", "portfolio", "--flows", "h1-h4"], "bad flow"),
    (["expect", "portfolio", "h1"], "give both SRC and DST"),
    (["expect", "portfolio", "h1", "s1"], "switch"),
    (["expect", "dumbbell,pairs=-1", "a1", "b1"], "pairs=-1"),
    (["parse", "ping", "/nonexistent/file"], "cannot read"),
    (["parse", "ping", "-", "--topology", "portfolio"], "go together"),
])
def test_user_errors_are_one_line(args, words):
    proc = run_cli(args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


@pytest.mark.parametrize("tool", ["ping", "iperf", "iperf3", "simpleperf"])
def test_malformed_tool_output_is_a_clear_error(tool):
    garbage = "this is not the output of any measurement tool\n"
    proc = run_cli(["parse", tool, "-"], stdin=garbage)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"cannot parse {tool} output" in proc.stderr


def test_parse_simpleperf_of_another_destination_is_refused():
    """A loopback run (127.0.0.1) is not a measurement of h1-h4: it is not judged as one
    (it was, with an 'invalid' verdict against the 30 Mbit/s path)."""
    sample = sorted((FIXTURES / "simpleperf").glob("client_t2*P2.jsonl"))[0]
    proc = run_cli(["parse", "simpleperf", str(sample), "--json", "--topology", "portfolio",
                    "--src", "h1", "--dst", "h4"])
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "measured 127.0.0.1" in lines[0] and "not h4" in lines[0]


@pytest.mark.parametrize("spec", ["dumbbell", "dumbbell,pairs=3", "line"])
def test_derived_plans_share_a_bottleneck_between_disjoint_pairs(spec):
    """Without CASES in the topology file, mux uses flows with no host in common, and
    more than one of them wherever the topology has two disjoint host pairs."""
    from labtools.model.cases import derive_plan
    from labtools.model.fairness import parse_flows

    topo = load_topology(spec)
    plan = derive_plan(topo)
    disjoint_possible = len(topo.hosts) >= 4
    for scenario in plan.mux + plan.parallel:
        flows = parse_flows(",".join(scenario))
        hosts = [h for f in flows for h in (f.src, f.dst)]
        assert len(hosts) == len(set(hosts)), scenario
        if disjoint_possible:
            assert len(flows) >= 2, scenario
    assert [f.connections for f in parse_flows(",".join(plan.parallel[0]))][0] == 2


def _write_topology(tmp_path, name, nodes, links):
    spec = tmp_path / f"{name}.json"
    spec.write_text(json.dumps({"name": name, "nodes": nodes, "links": links}))
    return str(spec)


def test_run_on_a_topology_without_a_rate_limited_pair_is_one_line(tmp_path):
    """It raised IndexError (a traceback) before anything started."""
    spec = _write_topology(tmp_path, "flat", [{"name": "h1"}, {"name": "h2"}],
                           [{"a": "h1", "b": "h2", "delay_ms": 5}])
    proc = run_cli(["run", spec, "path", "--results", str(tmp_path / "r.sqlite")])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no rate-limited path between two hosts" in lines[0]
    overview = json.loads(run_cli(["expect", spec, "--json"]).stdout)
    assert overview["path"] == [] and overview["mux"] == []


def test_a_host_named_like_a_connection_count_can_be_a_flow_end(tmp_path):
    """``h1:hx2`` names the host hx2 (it was read as host h with two connections)."""
    spec = _write_topology(
        tmp_path, "hx", [{"name": "h1"}, {"name": "hx2"}, {"name": "r1", "kind": "router"}],
        [{"a": "h1", "b": "r1"}, {"a": "r1", "b": "hx2", "bw_mbps": 10}])
    flows = json.loads(run_cli(["expect", spec, "--flows", "h1:hx2", "--json"]).stdout)["flows"]
    assert [(f["dst"], f["connections"], f["share_mbps"]) for f in flows] == [("hx2", 1, 10)]
    flows = json.loads(run_cli(["expect", spec, "--flows", "h1:hx2x2", "--json"]).stdout)["flows"]
    assert [(f["dst"], f["connections"]) for f in flows] == [("hx2", 2)]


def test_iperf3_text_is_not_read_as_iperf2():
    """iperf3's text output (real capture) gave made-up numbers through the iperf 2 parser."""
    proc = run_cli(["parse", "iperf", str(FIXTURES / "iperf3" / "tcp_text.txt")])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "iperf3's text output" in proc.stderr and "iperf3 -J" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("field, words", [({"bw_mbps": 2000}, "TCLink"),
                                          ({"delay_ms": 0.0001}, "tc can express")])
def test_values_mininet_cannot_apply_are_one_line(tmp_path, field, words):
    spec = _write_topology(tmp_path, "fast", [{"name": "h1"}, {"name": "h2"}],
                           [{"a": "h1", "b": "h2", **field}])
    proc = run_cli(["expect", spec, "h1", "h2"])
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert words in proc.stderr


# --- output that cannot be written; options that would do nothing ------------------------
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["expect", "portfolio", "h1", "h4"],
                                  ["expect", "portfolio", "--json"],
                                  ["expect", "--help"]])
def test_a_full_disk_on_standard_output_is_one_line(args):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "labtools.cli", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=str(ROOT), timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "cannot write to standard output: No space left on device" in lines[0]


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "labtools.cli", "expect", "portfolio",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=str(ROOT))
    proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0 and stderr == ""


def test_a_write_error_of_the_command_itself_is_not_taken_for_standard_output(monkeypatch,
                                                                              capsys):
    """Only standard output's own failures are 'cannot write to standard output'."""
    from labtools import cli
    from labtools.commands import expect_cmd

    def broken(args):
        raise OSError(28, "No space left on device")  # e.g. writing a file of its own

    monkeypatch.setattr(expect_cmd, "run", broken)
    with pytest.raises(OSError):
        cli.main(["expect", "portfolio"])


@pytest.mark.parametrize("args, words", [
    (["expect", "portfolio", "--flows", ""], "argument --flows: must not be empty"),
    (["expect", "portfolio", "--flows", "  "], "argument --flows: must not be empty"),
    (["expect", "", "h1", "h4"], "argument TOPOLOGY: must not be empty"),
    (["expect", "portfolio", "h1", ""], "argument DST: must not be empty"),
    (["results", "--csv", ""], "argument --csv: must not be empty"),
    (["results", "--db", ""], "argument --db: must not be empty"),
    (["results", "--case", ""], "argument --case: must not be empty"),
    (["expect", "portfolio", "--frame-bytes", "1514"], "--frame-bytes is for a pair"),
    (["expect", "portfolio", "--flows", "h1:h4", "--frame-bytes", "1514"],
     "--frame-bytes is for a pair"),
    (["expect", "portfolio", "h1", "h4", "--frame-bytes", "0"], "0 is outside 34..65549 bytes"),
    (["expect", "portfolio", "h1", "h4", "--frame-bytes", "-5"], "-5 is outside"),
    (["expect", "portfolio", "h1", "h4", "--frame-bytes", str(10**9)], "is outside"),
    (["expect", "portfolio", "h1", "h4", "--frame-bytes", "1.5e3"], "not a whole number"),
    (["expect", "portfolio", "--nonsense"], "unrecognized arguments: --nonsense"),
])
def test_empty_and_idle_options_are_refused_in_one_line(args, words):
    proc = run_cli(args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("args, words", [
    (["run", "portfolio", "path", "--results", ""], "--results: must not be empty"),
    (["run", "", "path"], "TOPOLOGY: must not be empty"),
    (["vm", "--memory", "", "--", "true"], "--memory: must not be empty"),
    (["vm", "--rwdir", "", "--", "true"], "--rwdir: must not be empty"),
    (["vm", "--timeout", "nan", "--", "true"], "not a time limit"),
    (["vm", "--timeout", "-5", "--", "true"], "not a time limit"),
    (["vm", "--cpus", "0", "--", "true"], "--cpus: 0 is less than 1"),
    (["notebooks", "build", "--solutions", ""], "--solutions: must not be empty"),
    (["notebooks", "execute", "--timeout", "0"], "not a time limit"),
])
def test_commands_that_start_a_network_or_a_vm_refuse_empty_options_first(args, words,
                                                                          capsys):
    """Checked in this process, before any handler runs: nothing can boot."""
    from labtools.cli import build_parser

    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(args)
    lines = capsys.readouterr().err.strip().splitlines()
    assert done.value.code == 2 and len(lines) == 1 and words in lines[0], lines


def test_notebook_files_and_timeout_are_for_execute(capsys):
    from labtools.cli import main

    assert main(["notebooks", "check", "solutions/01_x.ipynb"]) == 2
    assert main(["notebooks", "build", "--timeout", "60"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["labtools notebooks: error: FILE and --timeout are for execute, not check",
                   "labtools notebooks: error: FILE and --timeout are for execute, not build"]


@pytest.mark.parametrize("option", ["--topology", "--src", "--dst"])
def test_parse_refuses_an_empty_pair_option(option):
    argv = ["parse", "ping", str(FIXTURES / "ping" / "normal.txt"),
            "--topology", "portfolio", "--src", "h1", "--dst", "h2"]
    argv[argv.index(option) + 1] = ""
    proc = run_cli(argv)
    assert proc.returncode == 2 and "must not be empty" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_parse_reads_no_more_than_one_runs_output():
    proc = run_cli(["parse", "iperf3", "/dev/zero"])
    assert proc.returncode == 2 and "more than 256 MiB" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_instructors_command_absent_from_the_edition_is_one_line(monkeypatch, capsys):
    """The student edition has no instructor's wing: its commands say so, whatever their
    arguments (``--help`` too), and exit with status 2."""
    from labtools import cli

    monkeypatch.setitem(cli.COMMANDS, "answer-key", "labtools.instructor.absent.answer_key_cmd")
    for args in (["answer-key", "alice", "--all"], ["answer-key", "--help"]):
        assert cli.main(args) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == ("`labtools answer-key` is an instructor's command: not "
                                     "part of the student edition\n")
    assert "expect" in cli.build_parser().format_help()  # the others are there as before


def test_a_command_module_that_is_there_but_fails_to_import_fails(monkeypatch):
    """Only an instructor's command whose module is absent is taken for the edition's: a
    missing module of the student's side, or a wing's module that imports something absent,
    is the kit's fault and fails."""
    from labtools import cli

    monkeypatch.setitem(cli.COMMANDS, "expect", "labtools.commands.absent_cmd")
    with pytest.raises(ModuleNotFoundError):
        cli.build_parser()
    monkeypatch.setitem(cli.COMMANDS, "expect", "labtools.commands.expect_cmd")
    monkeypatch.setattr(cli.importlib, "import_module",
                        lambda name: (_ for _ in ()).throw(ModuleNotFoundError(
                            "no nbgrader", name="nbgrader")))
    with pytest.raises(ModuleNotFoundError):
        cli._command_module("labtools.instructor.commands.autograde_cmd")
