"""Record the simpleperf protocol exchanges lab 7's conformance harness replays.

    python -m labtools.teach.conformance.record [FOLDER]

For each exchange of :data:`EXCHANGES` (the options the assignment names: ``-t``, ``-n``
with B, KB and MB, ``-i``, ``-P`` 1 to 5) this runs the kit's real simpleperf server and
client on 127.0.0.1 with a recording relay between them, and writes what each side sent,
in order, on each connection, to ``FOLDER/exchanges.json`` (this module's folder by
default) with ``exchanges.json.meta`` beside it. Protocol messages are kept byte for byte
(hex); the data is kept as its length (its content, zeros, is checked and said so), since
it is the only part whose content the protocol ignores.
"""

from __future__ import annotations

import json
import platform
import socket
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Tuple

from labtools import __version__
from labtools.teach.simpleperf_runs import LOOPBACK, Server, run
from labtools.tools import args as toolargs
from labtools.tools.simpleperf import protocol

#: name -> the kit's client options of one exchange (-f changes no byte on the wire)
EXCHANGES: Dict[str, List[str]] = {
    "timed": ["-t", "1"],
    "amount-MB": ["-n", "2MB"],
    "amount-KB-P2": ["-n", "500KB", "-P", "2"],
    "amount-B-P3": ["-n", "250000B", "-P", "3"],
    "timed-interval": ["-t", "1.5", "-i", "0.25"],
    "amount-interval-P4": ["-n", "1.5MB", "-i", "0.2", "-P", "4"],
    "timed-interval-P5": ["-t", "1", "-i", "0.5", "-P", "5"],
}
PUMP_BYTES = 256 * 1024
#: the relay passes at most this many bytes a second on each connection, so that a timed
#: exchange holds tens of megabytes, not gigabytes (replayed in a moment on any machine)
PACE_BYTES_PER_S = 20e6


class Relay:
    """A TCP relay on 127.0.0.1 to ``port`` that keeps, per connection, the HELLO, the
    length of the data, the last 12 bytes the client sent, and everything the server
    sent."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.listener = socket.create_server((LOOPBACK, 0))
        self.listen_port = int(self.listener.getsockname()[1])
        self.conns: List[Dict[str, Any]] = []
        self.threads: List[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _addr = self.listener.accept()
            except OSError:
                return
            up = socket.create_connection((LOOPBACK, self.port))
            record: Dict[str, Any] = {"client_bytes": 0, "nonzero": 0, "server": bytearray()}
            self.conns.append(record)
            for target, args in ((self._client_side, (down, up, record)),
                                 (self._server_side, (up, down, record))):
                thread = threading.Thread(target=target, args=args, daemon=True)
                thread.start()
                self.threads.append(thread)

    @staticmethod
    def _client_side(down: socket.socket, up: socket.socket, record: Dict[str, Any]) -> None:
        head, tail = bytearray(), bytearray()
        started = time.monotonic()
        while True:
            chunk = down.recv(PUMP_BYTES)
            if not chunk:
                up.shutdown(socket.SHUT_WR)
                record["hello"], record["tail"] = bytes(head), bytes(tail)
                return
            record["client_bytes"] += len(chunk)
            taken = min(len(chunk), protocol.HELLO.size - len(head))
            head += chunk[:taken]
            body = chunk[taken:]
            record["nonzero"] += len(body) - body.count(0)
            tail = (tail + body)[-protocol.END.size:]
            up.sendall(chunk)
            ahead_s = record["client_bytes"] / PACE_BYTES_PER_S - (time.monotonic() - started)
            if ahead_s > 0:
                time.sleep(ahead_s)

    @staticmethod
    def _server_side(up: socket.socket, down: socket.socket, record: Dict[str, Any]) -> None:
        while True:
            chunk = up.recv(PUMP_BYTES)
            if not chunk:
                down.close()
                up.close()
                return
            record["server"] += chunk
            down.sendall(chunk)

    def close(self) -> None:
        """Wait for the connections' relays and stop listening."""
        for thread in self.threads:
            thread.join(timeout=30)
        self.listener.close()


def _messages(record: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """What the client and the server sent on one connection, in order."""
    hello, tail, total = record["hello"], record["tail"], record["client_bytes"]
    data_bytes = total - protocol.HELLO.size - protocol.END.size
    magic, count = protocol.END.unpack(tail)
    zeros = record["nonzero"] == len(tail) - tail.count(0)  # only the END is not zeros
    if magic != protocol.MAGIC_END or count != data_bytes or not zeros:
        raise RuntimeError("the kit's client did not end its data with a valid END")
    client = [{"kind": "HELLO", "hex": hello.hex()},
              {"kind": "data", "bytes": data_bytes, "content": "zeros"},
              {"kind": "END", "hex": tail.hex()}, {"kind": "half-close"}]
    sent = bytes(record["server"])
    server = [{"kind": "WELCOME", "hex": sent[:protocol.WELCOME.size].hex()}]
    rest = sent[protocol.WELCOME.size:]
    for at in range(0, len(rest), protocol.RECORD.size):
        piece = rest[at:at + protocol.RECORD.size]
        kind = {protocol.MAGIC_PROG: "PROG", protocol.MAGIC_ACK: "ACK"}[piece[:4]]
        server.append({"kind": kind, "hex": piece.hex()})
    server.append({"kind": "close"})
    return client, server


def record_exchange(options: List[str]) -> Dict[str, Any]:
    """One exchange of the kit's client (``options``) and server, through the relay."""
    with Server(lambda port: toolargs.simpleperf_server_args(LOOPBACK, port),
                "the kit's simpleperf server") as server:
        relay = Relay(server.port)
        done = run([*toolargs.SIMPLEPERF, "-c", "-I", LOOPBACK, "-p", str(relay.listen_port),
                    *options], "the kit's simpleperf client")
        relay.close()
    if done.status != 0:
        raise RuntimeError(f"the kit's client failed: {done.why()}")
    hellos = sorted(relay.conns, key=lambda r: protocol.HELLO.unpack(r["hello"])[2])
    connections = []
    for record in hellos:
        client, sent = _messages(record)
        connections.append({"client": client, "server": sent})
    return {"client_options": options, "connections": connections}


def main(argv: List[str]) -> int:
    """Record every exchange into the folder ``argv[0]`` (default: beside this file)."""
    folder = Path(argv[0]) if argv else Path(__file__).resolve().parent
    exchanges = {name: record_exchange(options) for name, options in EXCHANGES.items()}
    out = folder / "exchanges.json"
    out.write_text(json.dumps(exchanges, indent=1) + "\n", encoding="utf-8")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta = (f"tool: the kit's simpleperf (labtools {__version__}), client and server\n"
            f"python: {platform.python_version()} on {platform.system()} {platform.release()}\n"
            "command: python -m labtools.teach.conformance.record (this folder's record.py)\n"
            "how: the kit's server (simpleperf -s -b 127.0.0.1 -p PORT --json) and the kit's "
            "client (simpleperf -c -I 127.0.0.1 -p RELAY OPTIONS) on 127.0.0.1, a recording "
            "TCP relay between them (passing at most 20 MB/s per connection); each "
            "exchange's OPTIONS are its client_options. "
            "Protocol messages byte for byte (hex); the data (zeros) as its length; "
            "connections in the order of their HELLO's connection number\n"
            f"when: {when}\n")
    (folder / "exchanges.json.meta").write_text(meta, encoding="utf-8")
    print(f"{len(exchanges)} exchanges in {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
