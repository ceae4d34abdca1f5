"""One lab, run as an ordinary user by tests/system/test_sandbox.py (not a test module itself).

    python tests/support/sandbox_lab.py TOPOLOGY RESULTS_FILE

Starts a sandboxed lab (no calibration: this machine's kernel has no netem), prints one JSON
line with its holder's and nodes' PIDs, then answers one command per line on stdin:

- ``measure SRC DST``: a ping (5 echoes 0.2 s apart) and a 2 s iperf3 TCP transfer from SRC
  to DST; one JSON line with what they measured;
- ``serve HOST``: an iperf3 server on HOST that runs until the lab ends; one JSON line with
  its PID once it listens;
- ``quit``: stops the lab (also at end of input).
"""

from __future__ import annotations

import json
import os
import sys

from labtools.lab import probes
from labtools.lab.session import LabSession


def main() -> int:
    topology, results = sys.argv[1:3]
    with LabSession(topology, results=results, calibrate=False) as lab:
        backend = lab._backend
        assert backend is not None and backend.sandbox_pid is not None
        nodes = {name: backend.pid(name) for name in lab.topo.hosts + lab.topo.routers}
        print(json.dumps({"uid": os.getuid(), "holder": backend.sandbox_pid, "nodes": nodes}),
              flush=True)
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["quit"]:
                break
            if words[0] == "serve":
                server = lab.start_process(words[1], ["iperf3", "-s", "-p", "5999"])
                lab.await_server(server, ["iperf3"], words[1], 5999)
                print(json.dumps({"serving": server.pid}), flush=True)
                continue
            src, dst = words[1:3]
            ping = probes.ping(lab, src, dst, count=5, interval_s=0.2)
            tcp = probes.iperf3(lab, src, dst, duration_s=2, omit_s=0)
            print(json.dumps({"received": ping.summary.received,
                              "min_ms": ping.summary.min_ms,
                              "receiver_mbps": tcp.summary.receiver_mbps,
                              "ceiling_mbps": tcp.expected.tcp_goodput_ceiling_mbps}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
