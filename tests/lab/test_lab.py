"""The lab session's checks that need no network: names, input, server readiness."""

from __future__ import annotations

import os
import socket

import pytest

from labtools.errors import EnvironmentProblem, InputError, NoRouteError, UnknownNodeError
from labtools.lab import probes
from labtools.lab.session import LabSession, listening


def test_bad_input_is_refused_before_anything_runs():
    lab = LabSession("portfolio", results=None)  # not started: nothing may run
    with pytest.raises(UnknownNodeError, match="'h99'"):
        probes.ping(lab, "h1", "h99")
    with pytest.raises(UnknownNodeError, match="switch"):
        probes.ping(lab, "h1", "s1")
    with pytest.raises(NoRouteError):
        probes.ping(lab, "h1", "h1")
    with pytest.raises(InputError, match="count=0"):
        probes.ping(lab, "h1", "h4", count=0)
    with pytest.raises(InputError, match="rate must be > 0"):
        probes.iperf_udp(lab, "h1", "h4", rate_mbps=-5)
    with pytest.raises(InputError, match="duration=100000"):
        probes.iperf3(lab, "h1", "h4", duration_s=100000)
    with pytest.raises(InputError, match="parallel=6"):
        probes.simpleperf(lab, "h1", "h4", parallel=6)
    with pytest.raises(EnvironmentProblem, match="not running"):
        lab.run("h1", ["true"], 5)


def test_addresses_follow_the_routes():
    lab = LabSession("portfolio", results=None)
    assert lab.ip_towards("h1", "h4") == "10.0.4.2"
    assert lab.ip_towards("r1", "r2") == "10.0.1.2"  # the address on the shared link
    assert lab.expected("h1", "h9").rtt_ms == 80


@pytest.mark.parametrize("kind, udp", [(socket.SOCK_STREAM, False), (socket.SOCK_DGRAM, True)])
def test_listening_reads_the_process_network_namespace(kind, udp):
    sock = socket.socket(socket.AF_INET, kind)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    assert not listening(os.getpid(), port, udp) or udp
    if not udp:
        sock.listen(1)
    assert listening(os.getpid(), port, udp)
    sock.close()
    assert not listening(os.getpid(), port, udp)
