"""The machine's calibration is a client of the lab: it measures through whatever runs tools
on the calibration network's nodes (a :class:`~labtools.lab.base.HostRunner`), here one
answering with outputs of the real tools (tests/fixtures), without a network or a session."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple

import pytest

from labtools import settings
from labtools.lab import calibration
from labtools.lab.processes import ToolOutput
from labtools.model.calibration import CALIBRATION_DELAY_MS, CalibrationNetwork
from labtools.model.catalog import load_topology
from labtools.model.topology import HOST, Link, Node, Topology
from tests.conftest import FIXTURES

#: a dense ping over an unshaped link, one across the 5 ms link, an iperf3 -O 1 transfer
UNSHAPED = (FIXTURES / "ping" / "kit_probe.txt").read_text()  # min 0.009 ms
DELAYED = (FIXTURES / "ping" / "watch_delayed_link.txt").read_text()  # min 10.883 ms
TRANSFER = (FIXTURES / "iperf3" / "tcp_omit.json").read_text()  # 19.09 Mbit/s after -O 1


class FixtureRunner:
    """Runs nothing: answers each tool with a captured output and notes what was asked."""

    calibration_net: Optional[CalibrationNetwork] = None

    def __init__(self, net: CalibrationNetwork) -> None:
        self.net = net
        self.runs: List[Tuple[str, List[str]]] = []
        self.servers: List[Tuple[str, List[str], Optional[int]]] = []

    def run(self, host: str, argv: List[str], timeout_s: float) -> ToolOutput:
        self.runs.append((host, argv))
        if argv[0] == "iperf3":
            assert self.servers, "the client ran before its server"
            return ToolOutput(TRANSFER, 0)
        a, r1, r2, _b = self.net.nodes
        return ToolOutput(UNSHAPED if argv[-1] == self.net.address(a, r1) else DELAYED, 0)

    def start_process(self, host: str, argv: List[str]) -> None:
        raise AssertionError("the calibration waits for every tool it runs")

    @contextmanager
    def server(self, host: str, argv: List[str], port: Optional[int] = None,
               udp: bool = False, wait: bool = True) -> Iterator[None]:
        self.servers.append((host, argv, port))
        yield None


def test_the_calibration_measures_through_what_the_lab_hands_it(monkeypatch, tmp_path):
    monkeypatch.delenv("LABTOOLS_IN_VM", raising=False)
    monkeypatch.setenv("LABTOOLS_CACHE_DIR", str(tmp_path))
    net = CalibrationNetwork.beside(load_topology("portfolio"))
    a, r1, r2, b = net.nodes
    runner = FixtureRunner(net)
    profile = calibration.calibrate(runner, net)
    assert [(host, argv[0], argv[-1]) for host, argv in runner.runs[:2]] == [
        (a, "ping", net.address(a, r1)), (r1, "ping", net.address(r1, r2))]
    client_host, client = runner.runs[2]
    assert client_host == a and client[client.index("-c") + 1] == net.address(a, b)
    assert runner.servers == [(b, ["iperf3", "-s", "-1", "-J", "-p", str(calibration.PORT)],
                               calibration.PORT)]
    assert profile.unshaped_link_ms == pytest.approx(0.009 / 2, abs=1e-4)
    assert profile.delayed_link_late_ms == pytest.approx(10.883 / 2 - CALIBRATION_DELAY_MS, abs=1e-4)
    assert profile.forward_mbps == pytest.approx(19.09, abs=0.01)
    assert profile.emulation == "native"
    assert calibration.last_calibration() is None  # keeping it is the session's
    calibration.remember(profile)
    assert calibration.last_calibration() == profile


def test_the_calibration_network_takes_names_the_lab_does_not_use():
    taken = Topology("taken", (Node("cal1", HOST), Node("h2", HOST)), (Link("cal1", "h2"),))
    assert CalibrationNetwork.beside(taken).nodes == ("kcal1", "kcal2", "kcal3", "kcal4")
    net = CalibrationNetwork.beside(load_topology("portfolio"))
    assert net.nodes == ("cal1", "cal2", "cal3", "cal4")
    delayed = net.topo.links[1]
    assert (delayed.a, delayed.b, delayed.delay_ms) == ("cal2", "cal3", CALIBRATION_DELAY_MS)


@pytest.mark.parametrize("in_vm, mode, expected", [(None, None, "native"),
                                                    ("1", "kvm", "vm-kvm"),
                                                    ("1", None, "vm-tcg")])
def test_the_emulation_mode_is_what_the_vm_runner_set(monkeypatch, in_vm, mode, expected):
    for name, value in (("LABTOOLS_IN_VM", in_vm), ("LABTOOLS_VM_MODE", mode)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert settings.current().emulation.value == expected
    net = CalibrationNetwork.beside(load_topology("portfolio"))
    assert calibration.calibrate(FixtureRunner(net), net).emulation == expected


def test_without_netem_the_calibration_link_has_no_delay():
    net = CalibrationNetwork.beside(load_topology("portfolio"), delayed=False)
    assert net.delay_ms == 0 and net.topo.link("CAL").bw_mbps is not None
    assert CalibrationNetwork.beside(load_topology("portfolio")).delay_ms == CALIBRATION_DELAY_MS


@pytest.mark.root
def test_a_delay_free_lab_calibrates_on_a_kernel_without_netem():
    """A container or a course server without sch_netem runs delay-free labs (HTB only):
    the lab's calibration must not need netem either (it stopped every such lab)."""
    from labtools.lab.session import LabSession
    from labtools.system.capabilities import kernel_has_netem

    if kernel_has_netem()[0]:
        pytest.skip("this kernel has netem: the calibration delays its link")
    with LabSession("star,hosts=2,bw_mbps=50", results=None) as lab:
        assert lab.calibration_net is not None and lab.calibration_net.delay_ms == 0
        assert lab.machine is not None and lab.machine.forward_mbps > 0
        assert lab.machine.delayed_link_late_ms == 0
