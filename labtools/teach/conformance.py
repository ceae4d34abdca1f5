"""Lab 7's protocol conformance harness: the kit's side of recorded exchanges, replayed
to a student's simpleperf over real sockets on 127.0.0.1.

The exchanges in ``conformance/exchanges.json`` were recorded from real runs of the kit's
simpleperf client and server (``conformance/record.py``, ``exchanges.json.meta``), one for
each option the assignment names: ``-t``, ``-n`` with B, KB and MB, ``-i``, ``-P`` 1 to 5.
Each is played with one of the units of ``-f`` (:data:`UNIT_OF`), so that the set covers
B, KB and MB on both sides:

- :func:`client_conformance`: a fake kit server answers the student's client with the
  recorded server side (WELCOME, the PROG records, the ACK; the ACK's count is what
  arrived, as the kit's server would say) and checks what the client sent against the
  recorded client side (the HELLO's fields, the data, the END record), then the client's
  report against the bytes that arrived;
- :func:`server_conformance`: a fake kit client sends the student's server the recorded
  client side (HELLO, the data, END, the half-close) and checks the WELCOME and the ACK
  against the recorded ones, then the server's report against the bytes sent.

Every mismatch is one line that names the options (``with -n 500KB -P 2 -f KB ...``); the
program's output follows, quoted. The kit's own client and server are not needed: the
harness runs where the kit's simpleperf is not installed (the student edition).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from labtools.lab.own_simpleperf import Program
from labtools.teach.simpleperf_checks import (
    amount_mismatch,
    client_problems,
    quoted,
    read_report,
    server_problems,
)
from labtools.teach.simpleperf_runs import (
    CLIENT_TIMEOUT_S,
    LOOPBACK,
    SERVER_POLL_S,
    Finished,
    Server,
    student_client,
    student_server,
)
from labtools.tools.simpleperf import protocol

#: the recorded exchanges (and their .meta)
EXCHANGES_FILE = Path(__file__).resolve().parent / "conformance" / "exchanges.json"
#: the ``-f`` each exchange is played with (every unit on both sides), in the order they
#: are played
UNIT_OF = {"amount-MB": "B", "timed": "MB", "amount-KB-P2": "KB", "amount-B-P3": "B",
           "timed-interval": "KB", "amount-interval-P4": "MB", "timed-interval-P5": "B"}
#: seconds a server gets to print its rows once its connections are closed
REPORT_WAIT_S = 3.0
#: bytes handed to each send of the replayed data
SEND_BYTES = 64 * 1024
_ZEROS = memoryview(bytes(SEND_BYTES))


@dataclass(frozen=True)
class Exchange:
    """One recorded exchange: the kit client's options and, per connection (in the order
    of the HELLO's connection number), what each side sent (see ``record.py``)."""

    name: str
    options: List[str]
    connections: List[Dict[str, List[Dict[str, Any]]]]

    def sent(self, conn: int, side: str, kind: str) -> List[Dict[str, Any]]:
        """The messages of ``kind`` that ``side`` (client or server) sent on ``conn``."""
        return [m for m in self.connections[conn][side] if m["kind"] == kind]

    def data_bytes(self, conn: int) -> int:
        """The data bytes the kit's client sent on ``conn`` (0-based)."""
        return int(self.sent(conn, "client", "data")[0]["bytes"])

    def amount_bytes(self) -> Optional[int]:
        """The ``-n`` amount of each connection, None for a timed exchange."""
        return self.data_bytes(0) if "-n" in self.options else None

    def option(self, flag: str) -> Optional[float]:
        """The number after ``flag`` (``-t``, ``-i``) in the options, None without it."""
        return float(self.options[self.options.index(flag) + 1]) \
            if flag in self.options else None

    def words(self, unit: str) -> str:
        """``with -n 500KB -P 2 -f KB``."""
        return "with " + " ".join([*self.options, "-f", unit])


def load_exchanges(path: Path = EXCHANGES_FILE) -> List[Exchange]:
    """The recorded exchanges, in the order they were recorded."""
    found = json.loads(path.read_text(encoding="utf-8"))
    return [Exchange(name, e["client_options"], e["connections"]) for name, e in found.items()]


def _hex(message: Dict[str, Any]) -> bytes:
    return bytes.fromhex(message["hex"])


# --- the student's client against the kit's recorded server side ------------------------
@dataclass
class _Seen:
    """What the fake server saw on one connection."""

    peer: str
    hello: bytes = b""
    received: int = 0
    tail: bytes = b""
    error: str = ""

    @property
    def ended(self) -> bool:
        """The data ended with an END record counting it."""
        return _ends_with_end(self.tail, self.received)

    @property
    def data_bytes(self) -> int:
        """The data bytes (the END record not counted)."""
        return self.received - protocol.END.size if self.ended else self.received


def _ends_with_end(tail: bytes, received: int) -> bool:
    if len(tail) != protocol.END.size:
        return False
    magic, count = protocol.END.unpack(tail)
    return magic == protocol.MAGIC_END and count == received - protocol.END.size


class FakeServer:
    """The kit's server side of ``exchange``, replayed on 127.0.0.1 to every connection
    that comes (at most the exchange's connections, plus one)."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.listener = socket.create_server((LOOPBACK, 0))
        self.port = int(self.listener.getsockname()[1])
        self.seen: List[_Seen] = []
        self.threads: List[threading.Thread] = []
        self.listener.settimeout(CLIENT_TIMEOUT_S)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for _ in range(len(self.exchange.connections) + 1):
            try:
                sock, addr = self.listener.accept()
            except OSError:
                return
            seen = _Seen(f"{addr[0]}:{addr[1]}")
            self.seen.append(seen)
            thread = threading.Thread(target=self._serve, args=(sock, seen), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _serve(self, sock: socket.socket, seen: _Seen) -> None:
        with sock:
            sock.settimeout(CLIENT_TIMEOUT_S)
            try:
                seen.hello = protocol.recv_exact(sock, protocol.HELLO.size)
                number = protocol.HELLO.unpack(seen.hello)[2] \
                    if len(seen.hello) == protocol.HELLO.size else 1
                conn = number - 1 if 1 <= number <= len(self.exchange.connections) else 0
                replies = self.exchange.connections[conn]["server"]
                sock.sendall(b"".join(_hex(m) for m in replies if m["kind"] in ("WELCOME",
                                                                                "PROG")))
                while True:
                    chunk = sock.recv(SEND_BYTES)
                    if not chunk:
                        break
                    seen.received += len(chunk)
                    seen.tail = (seen.tail + chunk)[-protocol.END.size:]
                ack = next(_hex(m) for m in replies if m["kind"] == "ACK")
                micros = protocol.RECORD.unpack(ack)[1]
                sock.sendall(protocol.RECORD.pack(protocol.MAGIC_ACK, micros, seen.data_bytes))
            except OSError as err:
                seen.error = str(err)

    def close(self) -> None:
        """Wait for the connections and stop listening."""
        for thread in self.threads:
            thread.join(timeout=CLIENT_TIMEOUT_S)
        self.listener.close()


def _hello_problems(exchange: Exchange, seen: List[_Seen], say: str) -> List[str]:
    """The HELLOs against the kit client's: magic, version, numbers, interval, session."""
    fields = ("magic", "version", "connection number", "connections", "interval (ms)")
    want = [protocol.HELLO.unpack(_hex(exchange.sent(i, "client", "HELLO")[0]))
            for i in range(len(exchange.connections))]
    got = [protocol.HELLO.unpack(s.hello) for s in seen if len(s.hello) == protocol.HELLO.size]
    if len(got) != len(seen):
        return [f"{say}: your client sent fewer than {protocol.HELLO.size} bytes of HELLO"]
    problems = []
    for index, name in enumerate(fields):
        mine = sorted(h[index] for h in got)
        theirs = sorted(h[index] for h in want)
        if mine != theirs:
            problems.append(f"{say}: your client's HELLOs say {name} {mine}, the kit "
                            f"client's {theirs}")
    if len({h[5] for h in got}) > 1:
        problems.append(f"{say}: your client's connections carry different session ids "
                        "(one run, one session id on every connection)")
    return problems


def client_exchange_problems(program: Program, exchange: Exchange, unit: str) -> List[str]:
    """What is wrong with the student's client in one exchange played with ``-f unit``."""
    say = exchange.words(unit)
    server = FakeServer(exchange)
    try:
        run = student_client(program, server.port, *exchange.options, "-f", unit)
    finally:
        server.close()
    problems = [f"{say}: your client ended with {run.why()}"] if run.status else []
    problems += [f"{say}: {s.peer}: {s.error}" for s in server.seen if s.error]
    count = len(exchange.connections)
    if len(server.seen) != count:
        problems.append(f"{say}: your client opened {len(server.seen)} connection(s), "
                        f"{count} expected")
    else:
        problems += _hello_problems(exchange, server.seen, say)
    for seen in server.seen:
        if not seen.ended:
            problems.append(f"{say}: the data on {seen.peer} did not end with an END record "
                            "counting it (the kit's server would report it interrupted)")
        amount = exchange.amount_bytes()
        if amount is not None and seen.data_bytes != amount:
            problems.append(f"{say}: your client sent {seen.data_bytes} data bytes on "
                            f"{seen.peer}, the kit's client {amount}")
    if not problems:  # what arrived first: a unit mistake shows in every number
        problems = _report_problems(run, server.seen, unit)
        found = client_problems(run, count, exchange.amount_bytes(),
                                exchange.option("-t") if "-n" not in exchange.options
                                else None, exchange.option("-i") or 0, unit)[:-1]
        problems += [f"{say}: {p}" if not p.startswith("with -f") else p
                     for p in found if p not in problems]
    return problems + [quoted("your client", run.out + run.err)] if problems else []


def _report_problems(run: Finished, seen: List[_Seen], unit: str) -> List[str]:
    """Each total row against the bytes that arrived on its connection."""
    report = read_report(run.out)
    problems = []
    for s in seen:
        row = report.total(s.peer)
        if row is None:
            problems.append(f"with -f {unit}: your client printed no total row for {s.peer}")
        elif not row.counts(s.data_bytes):
            problems.append(amount_mismatch("your client", row, s.data_bytes, unit,
                                            "arrived at the kit's server"))
    return problems


# --- the student's server against the kit's recorded client side ------------------------
def _play_client(exchange: Exchange, conn: int, sock: socket.socket,
                 out: Dict[int, Tuple[bytes, bytes, str]]) -> None:
    """Send the recorded client side of ``conn`` after its WELCOME; keep (WELCOME, what
    the server sent after it, error)."""
    try:
        sock.sendall(_hex(exchange.sent(conn, "client", "HELLO")[0]))
        welcome = protocol.recv_exact(sock, protocol.WELCOME.size)
        left = exchange.data_bytes(conn)
        while left > 0:
            left -= sock.send(_ZEROS[:min(left, SEND_BYTES)])
        sock.sendall(_hex(exchange.sent(conn, "client", "END")[0]))
        sock.shutdown(socket.SHUT_WR)
        rest = b""
        while True:
            chunk = sock.recv(SEND_BYTES)
            if not chunk:
                break
            rest += chunk
        out[conn] = (welcome, rest, "")
    except OSError as err:
        out[conn] = (b"", b"", str(err) or type(err).__name__)
    finally:
        sock.close()


def _ack(rest: bytes) -> Optional[Tuple[bytes, int, int]]:
    """The last ACK among the 20-byte records the server sent after its WELCOME."""
    records = [protocol.RECORD.unpack(rest[i:i + protocol.RECORD.size])
               for i in range(0, len(rest) - protocol.RECORD.size + 1, protocol.RECORD.size)]
    acks = [r for r in records if r[0] == protocol.MAGIC_ACK]
    return acks[-1] if acks else None


def _await_rows(server: Server, idents: List[str]) -> None:
    """Give the server :data:`REPORT_WAIT_S` to print its row of each connection (it may
    print after it closed the connection)."""
    deadline = time.monotonic() + REPORT_WAIT_S
    while time.monotonic() < deadline:
        report = read_report(server.output, server=True)
        if all(report.total(ident) for ident in idents):
            return
        time.sleep(SERVER_POLL_S)


def server_exchange_problems(program: Program, exchange: Exchange, unit: str) -> List[str]:
    """What is wrong with the student's server in one exchange, run with ``-f unit``."""
    say = exchange.words(unit)
    out: Dict[int, Tuple[bytes, bytes, str]] = {}
    idents: Dict[int, str] = {}
    with student_server(program, "-f", unit) as server:
        threads = []
        for conn in range(len(exchange.connections)):
            sock = socket.create_connection((LOOPBACK, server.port), timeout=CLIENT_TIMEOUT_S)
            local = sock.getsockname()
            idents[conn] = f"{local[0]}:{local[1]}"
            threads.append(threading.Thread(target=_play_client,
                                            args=(exchange, conn, sock, out), daemon=True))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=CLIENT_TIMEOUT_S)
        _await_rows(server, list(idents.values()))
        output = server.stop()
    problems = []
    for conn, ident in idents.items():
        welcome, rest, error = out.get(conn, (b"", b"", "no answer in time"))
        want = _hex(exchange.sent(conn, "server", "WELCOME")[0])
        recorded = protocol.RECORD.unpack(_hex(exchange.sent(conn, "server", "ACK")[0]))
        ack = _ack(rest)
        if error:
            problems.append(f"{say}: connection {ident}: {error}")
        elif welcome != want:
            problems.append(f"{say}: your server answered the HELLO with {welcome.hex()}, "
                            f"the kit's server with {want.hex()} (the WELCOME)")
        elif ack is None:
            problems.append(f"{say}: your server sent no ACK on {ident} after the END")
        elif ack[2] != recorded[2]:
            problems.append(f"{say}: your server's ACK counts {ack[2]} bytes on {ident}, the "
                            f"kit's server counted {recorded[2]} (the END record is not data)")
    if problems:
        return problems + [quoted("your server", output)]
    sent = {ident: exchange.data_bytes(conn) for conn, ident in idents.items()}
    found = server_problems(output, sent, unit)
    return [p if p.startswith("with -f") or p.startswith("your server printed:")
            else f"{say}: {p}" for p in found]


def _in_order(exchanges: List[Exchange]) -> List[Exchange]:
    """The exchanges in the order of :data:`UNIT_OF` (an amount first: it is the first
    thing the command line reads)."""
    order = list(UNIT_OF)
    return sorted(exchanges, key=lambda e: order.index(e.name))


def _first_problems(program: Program, problems_of: Callable[..., List[str]]) -> List[str]:
    """The problems ``problems_of(program, exchange, unit)`` finds in the first recorded
    exchange that has some (empty when all conform)."""
    for exchange in _in_order(load_exchanges()):
        found = problems_of(program, exchange, UNIT_OF[exchange.name])
        if found:
            return found
    return []


def client_conformance(program: Program) -> List[str]:
    """Every recorded exchange played to the student's client: the problems of the first
    exchange that has some (empty when all conform)."""
    return _first_problems(program, client_exchange_problems)


def server_conformance(program: Program) -> List[str]:
    """Every recorded exchange played to the student's server: the problems of the first
    exchange that has some (empty when all conform)."""
    return _first_problems(program, server_exchange_problems)
