"""The simpleperf client: sends on ``P`` parallel connections, then asks for the count.

One sending thread per connection pushes a preallocated 128 KiB buffer of zeros with
``socket.send`` (the call releases the GIL) until the time is up or the amount is sent,
then the END record; a stop (Ctrl-C, SIGTERM) ends the data without END. Either way it
half-closes the connection and waits for the server's ACK with the exact number of bytes
received. The main thread prints interval rows and drains the server's progress records.
A run is complete when every connection sent its END and got an ACK that counts every byte
sent; otherwise the end record says ``interrupted`` (and ``error`` why, unless a signal
stopped it). Wire protocol: :mod:`labtools.tools.simpleperf.protocol`.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from labtools import __version__
from labtools.errors import InputError, ToolError
from labtools.tools.simpleperf import protocol
from labtools.tools.simpleperf.options import Options
from labtools.tools.simpleperf.report import HeldRows, Record, Reporter, mbps, seconds
from labtools.tools.simpleperf.stopping import StopFlag

#: bytes handed to each send call
SEND_BUFFER_BYTES = 128 * 1024
#: seconds to connect and get the server's WELCOME
CONNECT_TIMEOUT_S = 5.0
#: seconds between connection attempts while the server refuses (``--wait``)
RETRY_S = 0.05
#: seconds a send may block before the connection counts as stalled
STALL_TIMEOUT_S = 30.0
#: seconds to wait for the server's ACK after the half-close (the queued data drains
#: first, which on a slow emulated link can take several seconds)
ACK_TIMEOUT_S = 30.0
#: seconds between checks while waiting (interval ticks are kept exactly)
POLL_S = 0.1


@dataclass
class _Conn:
    """One data connection and what the client knows about it."""

    number: int
    sock: socket.socket
    local: str
    remote: str
    sent: int = 0
    end_s: float = 0.0
    sending_done: bool = False
    planned_end: bool = False  #: the END record went out: all that was planned is sent
    error: Optional[str] = None
    reader: protocol.RecordReader = field(default_factory=lambda: protocol.RecordReader([]))
    lock: threading.Lock = field(default_factory=threading.Lock)


def _address(addr: Tuple) -> str:
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _open(server: str, port: int, wait_s: float, stop: Optional[StopFlag]) -> socket.socket:
    """A TCP connection to ``server``; while it refuses, tried again every
    :data:`RETRY_S` for up to ``wait_s`` seconds (a server that is still starting), unless
    a stop is asked for."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return socket.create_connection((server, port), timeout=CONNECT_TIMEOUT_S)
        except ConnectionRefusedError:
            if time.monotonic() >= deadline:
                raise
            if stop is not None and stop.wait(RETRY_S):
                raise
            if stop is None:
                time.sleep(RETRY_S)


def connect(server: str, port: int, hello: protocol.Hello, wait_s: float = 0.0,
            stop: Optional[StopFlag] = None) -> socket.socket:
    """A connection to the server that has accepted ``hello``; ``wait_s``: seconds to keep
    trying while the server refuses (``stop`` ends the waiting).

    Raises:
        InputError: the server's name cannot be resolved.
        ToolError: the server refuses (for ``wait_s``), does not answer within
            :data:`CONNECT_TIMEOUT_S`, or does not speak this protocol version.
    """
    where = f"{server} port {port}"
    try:
        sock = _open(server, port, wait_s, stop)
    except socket.gaierror as err:
        raise InputError(f"cannot resolve server address {server!r}: {err.strerror}") from None
    except UnicodeError:
        raise InputError(f"cannot resolve server address {server!r}: not a valid host name") \
            from None
    except socket.timeout:
        raise ToolError(f"no answer from {where} within {CONNECT_TIMEOUT_S:g} s") from None
    except ConnectionRefusedError:
        waited = f" for {wait_s:g} s" if wait_s else ""
        raise ToolError(f"cannot connect to {where}: connection refused{waited} "
                        "(is a simpleperf server running there?)") from None
    except OSError as err:
        raise ToolError(f"cannot connect to {where}: {err.strerror or err}") from None
    try:
        sock.sendall(hello.encode())
        accepted, version = protocol.decode_welcome(
            protocol.recv_exact(sock, protocol.WELCOME.size))
    except OSError as err:
        sock.close()
        raise ToolError(f"handshake with {where} failed: {err.strerror or err}") from None
    if not accepted:
        sock.close()
        raise ToolError(f"{where} is not a simpleperf protocol {protocol.VERSION} server "
                        f"(it answered with protocol version {version})")
    return sock


class Client:
    """A simpleperf client run described by ``opts``."""

    def __init__(self, opts: Options, reporter: Reporter, stop: StopFlag) -> None:
        self.opts = opts
        self.reporter = reporter
        self.stop = stop
        self._payload = memoryview(bytearray(SEND_BUFFER_BYTES))

    def run(self) -> int:
        """Run the transfer; the exit status (0, 1 on a lost connection, 130/143 on a signal).

        Raises:
            InputError: the server's name cannot be resolved.
            ToolError: a connection could not be set up.
        """
        opts = self.opts
        session = os.urandom(16)
        self.reporter.emit({
            "type": "start", "role": "client", "version": __version__,
            "protocol": protocol.VERSION, "session": session.hex(), "server": opts.server,
            "port": opts.port, "parallel": opts.parallel,
            "time_s": None if opts.amount_bytes is not None else opts.time_s,
            "amount_bytes_per_conn": opts.amount_bytes, "interval_s": opts.interval_s,
            "unit": opts.unit})
        conns = self._open_all(session)
        t0 = time.monotonic()
        threads = [threading.Thread(target=self._send, args=(c, t0), daemon=True)
                   for c in conns]
        for thread in threads:
            thread.start()
        self._watch(conns, threads, t0)
        for conn in conns:
            conn.sock.close()
        return self._finish(conns)

    def _open_all(self, session: bytes) -> List[_Conn]:
        opts, conns = self.opts, []
        interval_ms = int(round(opts.interval_s * 1000))
        try:
            for number in range(1, opts.parallel + 1):
                hello = protocol.Hello(number, opts.parallel, interval_ms, session)
                sock = connect(opts.server, opts.port, hello, opts.wait_s, self.stop)
                conns.append(_Conn(number, sock, _address(sock.getsockname()),
                                   _address(sock.getpeername())))
        except (InputError, ToolError):
            for conn in conns:
                conn.sock.close()
            raise
        for conn in conns:
            conn.sock.settimeout(STALL_TIMEOUT_S)
            self.reporter.emit({"type": "conn_start", "conn": conn.number,
                                "local": conn.local, "remote": conn.remote})
        return conns

    def _send(self, conn: _Conn, t0: float) -> None:
        """Sending thread: push data, then END if all is sent, then wait for the ACK."""
        send, now, stop, view = conn.sock.send, time.monotonic, self.stop, self._payload
        amount = self.opts.amount_bytes
        try:
            if amount is None:
                deadline = t0 + self.opts.time_s
                while not stop.is_set and now() < deadline:
                    conn.sent += send(view)
            else:
                while not stop.is_set and conn.sent < amount:
                    conn.sent += send(view[:amount - conn.sent])
            if not stop.is_set:
                conn.sock.sendall(protocol.encode_end(conn.sent))
                conn.planned_end = True
        except socket.timeout:
            conn.error = f"sending stalled for {STALL_TIMEOUT_S:g} s"
        except OSError as err:
            conn.error = f"connection lost while sending: {err.strerror or err}"
        conn.end_s = now() - t0
        with conn.lock:
            conn.sending_done = True
        if conn.error is None:
            self._await_ack(conn)

    def _await_ack(self, conn: _Conn) -> None:
        """Half-close and read records until the server's ACK; check its count."""
        sock = conn.sock
        deadline = time.monotonic() + ACK_TIMEOUT_S
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(POLL_S)
            while conn.reader.ack is None and not conn.reader.malformed:
                if time.monotonic() > deadline:
                    conn.error = f"no ACK from the server within {ACK_TIMEOUT_S:g} s"
                    return
                if self.stop.count >= 2:
                    conn.error = "stopped waiting for the server's ACK (second interrupt)"
                    return
                try:
                    data = sock.recv(4096)
                except socket.timeout:
                    continue
                if not data:
                    conn.error = "the server closed the connection without an ACK"
                    return
                conn.reader.feed(data)
        except OSError as err:
            conn.error = f"connection lost while waiting for the ACK: {err.strerror or err}"
            return
        if conn.reader.malformed:
            conn.error = "the server sent a malformed record"
        elif conn.reader.ack is not None and conn.reader.ack[1] != conn.sent:
            conn.error = (f"the server counted {conn.reader.ack[1]} bytes, "
                          f"{conn.sent} were sent")

    def _drain(self, conns: List[_Conn]) -> None:
        """Read the server's progress records of connections that are still sending."""
        sending = [c for c in conns if not c.sending_done]
        if not sending:
            return
        try:
            ready, _, _ = select.select([c.sock for c in sending], [], [], 0)
        except (OSError, ValueError):
            return
        for conn in sending:
            with conn.lock:
                if conn.sock in ready and not conn.sending_done:
                    try:
                        conn.reader.feed(conn.sock.recv(65536))
                    except OSError:
                        pass

    def _watch(self, conns: List[_Conn], threads: List[threading.Thread], t0: float) -> None:
        """Main thread while sending: print interval rows, drain records, wait for the end."""
        interval = self.opts.interval_s
        next_tick = t0 + interval if interval else None
        marks: Dict[int, Tuple[float, int]] = {c.number: (0.0, 0) for c in conns}
        rows = {c.number: HeldRows(interval, self._row_printer("sender", c.number))
                for c in conns}
        while True:
            alive = [t for t in threads if t.is_alive()]
            if not alive:
                break
            wait = POLL_S if next_tick is None else min(POLL_S, next_tick - time.monotonic())
            alive[0].join(max(0.0, wait))
            self._drain(conns)
            if next_tick is not None and time.monotonic() >= next_tick:
                self._sender_rows(conns, marks, rows, time.monotonic() - t0)
                while next_tick <= time.monotonic():
                    next_tick += interval
        if interval:
            self._sender_rows(conns, marks, rows, None)

    def _row_printer(self, side: str, conn: int) -> Callable[[float, float, int], None]:
        return lambda start_s, end_s, nbytes: self._interval_row(side, conn, start_s, end_s, nbytes)

    def _sender_rows(self, conns: List[_Conn], marks: Dict[int, Tuple[float, int]],
                     rows: Dict[int, HeldRows], elapsed: Optional[float]) -> None:
        """One interval per connection (held one interval, see :class:`HeldRows`);
        ``elapsed`` None = the last ones."""
        for conn in conns:
            start_s, start_bytes = marks[conn.number]
            if start_s < 0:
                continue  # this connection's last row is out already
            done = conn.sending_done
            sent = conn.sent
            end_s = max(start_s, conn.end_s if done or elapsed is None else elapsed)
            if done or elapsed is None:
                rows[conn.number].close(start_s, end_s, sent - start_bytes)
                marks[conn.number] = (-1.0, sent)
            else:
                rows[conn.number].add(start_s, end_s, sent - start_bytes)
                marks[conn.number] = (end_s, sent)

    def _interval_row(self, side: str, conn: int, start_s: float, end_s: float,
                      nbytes: int) -> None:
        self.reporter.emit({"type": "interval", "side": side, "conn": conn,
                            "start_s": seconds(start_s), "end_s": seconds(end_s),
                            "bytes": nbytes, "rate_mbps": mbps(nbytes, end_s - start_s)})

    def _receiver_rows(self, conn: _Conn) -> None:
        points = list(conn.reader.progress)
        if conn.reader.ack is not None:
            points.append(conn.reader.ack)
        rows = HeldRows(self.opts.interval_s, self._row_printer("receiver", conn.number))
        last_s, last_bytes = 0.0, 0
        for index, (elapsed, total) in enumerate(points):
            if index == len(points) - 1:
                rows.close(last_s, elapsed, total - last_bytes)
            elif total > last_bytes:
                rows.add(last_s, elapsed, total - last_bytes)
            last_s, last_bytes = elapsed, total
        rows.close(last_s, last_s, 0)  # prints what is still held (a no-op after close)

    def _finish(self, conns: List[_Conn]) -> int:
        """Print receiver rows, per-connection results and totals; the exit status."""
        if self.opts.interval_s:
            for conn in conns:
                self._receiver_rows(conn)
        for conn in conns:
            self.reporter.emit(self._conn_end(conn))
        end = self._end_record(conns)
        self.reporter.emit(end)
        if end["error"] is not None and self.stop.signum is None:
            raise ToolError(end["error"])
        return self.stop.exit_status(1 if end["interrupted"] else 0)

    def _conn_end(self, conn: _Conn) -> Record:
        ack = conn.reader.ack
        server_bytes, server_s = (ack[1], ack[0]) if ack is not None else (None, None)
        return {"type": "conn_end", "conn": conn.number, "bytes_sent": conn.sent,
                "server_bytes": server_bytes, "duration_s": seconds(conn.end_s),
                "server_duration_s": None if server_s is None else seconds(server_s),
                "sender_mbps": mbps(conn.sent, conn.end_s),
                "receiver_mbps": None if ack is None else mbps(ack[1], ack[0]),
                "error": conn.error}

    def _end_record(self, conns: List[_Conn]) -> Record:
        sent = sum(c.sent for c in conns)
        duration = max(c.end_s for c in conns)
        acks = [c.reader.ack for c in conns]
        acked = all(a is not None for a in acks)
        server_bytes = sum(a[1] for a in acks if a is not None) if acked else None
        server_s = max(a[0] for a in acks if a is not None) if acked else None
        errors = [f"connection {c.number}: {c.error}" for c in conns if c.error]
        planned = all(c.planned_end for c in conns)
        return {"type": "end", "role": "client", "connections": len(conns),
                "bytes_sent": sent, "server_bytes": server_bytes,
                "duration_s": seconds(duration),
                "server_duration_s": None if server_s is None else seconds(server_s),
                "sender_mbps": mbps(sent, duration),
                "receiver_mbps": None if server_s is None else mbps(server_bytes or 0, server_s),
                "exact": acked and server_bytes == sent,
                "interrupted": bool(errors) or not planned or not acked,
                "error": errors[0] if errors else None}
