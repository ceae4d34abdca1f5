"""The simpleperf server: accepts sessions of parallel connections, counts what arrives.

One thread per connection (socket I/O releases the GIL, so threads do not slow each other
down); several clients can be served at the same time. The wire protocol is described in
:mod:`labtools.tools.simpleperf.protocol`. A connection's transfer is complete only when
its data ended with the client's END record; otherwise it is reported ``interrupted``
with the reason in ``error``. The server runs until SIGINT or SIGTERM, then reports the
connections still open with what they received so far (interrupted: the server was
stopped).
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from labtools import __version__
from labtools.errors import InputError, ToolError
from labtools.tools.simpleperf import protocol
from labtools.tools.simpleperf.options import Options
from labtools.tools.simpleperf.report import HeldRows, Record, Reporter, mbps, seconds
from labtools.tools.simpleperf.stopping import StopFlag

#: bytes per recv_into call
RECV_BUFFER_BYTES = 256 * 1024
#: seconds a new connection has to send its HELLO
HELLO_TIMEOUT_S = 10.0
#: seconds without any data before a connection is given up
IDLE_TIMEOUT_S = 60.0
#: seconds between checks of the stop flag while waiting for connections
ACCEPT_POLL_S = 0.2


@dataclass
class _Conn:
    """One accepted data connection."""

    sock: socket.socket
    peer: str
    local: str
    hello: protocol.Hello
    session: str
    started: float = 0.0


@dataclass
class _Session:
    """Totals of one client session (its ``parallel`` connections)."""

    peer_host: str
    parallel: int
    ended: int = 0
    nbytes: int = 0
    duration_s: float = 0.0


@dataclass
class _Totals:
    sessions: Dict[str, _Session] = field(default_factory=dict)
    connections: int = 0
    nbytes: int = 0
    interrupted: int = 0


def _address(addr: Tuple) -> str:
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def open_listener(bind: str, port: int) -> socket.socket:
    """A listening TCP socket on ``bind``:``port``.

    Raises:
        InputError: the address cannot be resolved.
        ToolError: the address is not on this host, or the port is in use.
    """
    try:
        family = socket.getaddrinfo(bind, port, type=socket.SOCK_STREAM,
                                    flags=socket.AI_PASSIVE)[0][0]
    except socket.gaierror as err:
        raise InputError(f"cannot resolve bind address {bind!r}: {err.strerror}") from None
    except UnicodeError:
        raise InputError(f"cannot resolve bind address {bind!r}: not a valid host name") \
            from None
    try:
        return socket.create_server((bind, port), family=family, backlog=64)
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise ToolError(f"port {port} on {bind} is already in use") from None
        reason = err.strerror or str(err)
        raise ToolError(f"cannot listen on {bind} port {port}: {reason}") from None


class Server:
    """A simpleperf server bound to ``opts.bind``:``opts.port``."""

    def __init__(self, opts: Options, reporter: Reporter, stop: StopFlag) -> None:
        self.opts = opts
        self.reporter = reporter
        self.stop = stop
        self._lock = threading.Lock()
        self._open: List[socket.socket] = []  # every accepted connection, handshake too
        self._threads: List[threading.Thread] = []
        self._totals = _Totals()

    def run(self) -> int:
        """Serve until a stop is requested; returns the exit status (130/143 on a signal).

        Raises:
            ToolError: the listening socket cannot be opened.
        """
        listener = open_listener(self.opts.bind, self.opts.port)
        listener.settimeout(ACCEPT_POLL_S)
        self.reporter.emit({"type": "server_start", "role": "server", "version": __version__,
                            "protocol": protocol.VERSION, "bind": self.opts.bind,
                            "port": listener.getsockname()[1], "unit": self.opts.unit})
        with listener:
            while not self.stop.is_set:
                try:
                    sock, peer = listener.accept()
                except socket.timeout:
                    continue
                except OSError as err:
                    self._warn(f"accept failed: {err.strerror or err}")
                    self.stop.wait(ACCEPT_POLL_S)
                    continue
                thread = threading.Thread(target=self._serve, args=(sock, peer), daemon=True)
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
                thread.start()
        self._shutdown()
        return self.stop.exit_status(0)

    def _shutdown(self) -> None:
        with self._lock:
            for sock in self._open:
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes the thread waiting on it
                except OSError:
                    pass
        for thread in self._threads:
            thread.join(timeout=5.0)
        totals = self._totals
        self.reporter.emit({"type": "server_end", "sessions": len(totals.sessions),
                            "connections": totals.connections, "bytes": totals.nbytes,
                            "interrupted": totals.interrupted > 0})

    def _warn(self, message: str) -> None:
        self.reporter.emit({"type": "warning", "role": "server", "message": message})

    def _serve(self, sock: socket.socket, peer_addr: Tuple) -> None:
        peer = _address(peer_addr)
        with self._lock:
            self._open.append(sock)
        try:
            with sock:
                if self.stop.is_set:
                    return
                conn = self._handshake(sock, peer)
                if conn is not None:
                    self._receive(conn)
        finally:
            with self._lock:
                self._open.remove(sock)

    def _handshake(self, sock: socket.socket, peer: str) -> Optional[_Conn]:
        """Read the HELLO and answer it; the accepted connection, or None."""
        try:
            sock.settimeout(HELLO_TIMEOUT_S)
            hello = protocol.decode_hello(protocol.recv_exact(sock, protocol.HELLO.size))
            if self.stop.is_set:
                return None
            if hello is None or hello.version != protocol.VERSION:
                sock.sendall(protocol.encode_welcome(False))
                self._warn(f"refused a connection from {peer}: not a valid simpleperf "
                           f"protocol {protocol.VERSION} HELLO")
                return None
            sock.sendall(protocol.encode_welcome(True))
        except OSError as err:
            if not self.stop.is_set:
                self._warn(f"handshake with {peer} failed: {err.strerror or err}")
            return None
        conn = _Conn(sock, peer, _address(sock.getsockname()), hello, hello.session.hex(),
                     started=time.monotonic())
        with self._lock:
            self._totals.sessions.setdefault(
                conn.session, _Session(peer.rsplit(":", 1)[0], hello.parallel))
        self.reporter.emit({"type": "server_conn_start", "session": conn.session,
                            "conn": hello.conn, "parallel": hello.parallel, "peer": peer,
                            "local": conn.local})
        return conn

    def _interval(self, conn: _Conn, start_s: float, end_s: float, nbytes: int) -> None:
        self.reporter.emit({"type": "server_interval", "session": conn.session,
                            "conn": conn.hello.conn, "peer": conn.peer,
                            "start_s": seconds(start_s), "end_s": seconds(end_s),
                            "bytes": nbytes, "rate_mbps": mbps(nbytes, end_s - start_s)})

    def _receive(self, conn: _Conn) -> None:
        """Count bytes until the client closes its side (then ACK) or a stop; report the
        result (complete only with the client's END record)."""
        sock, started = conn.sock, conn.started
        interval = conn.hello.interval_ms / 1000.0
        next_tick = started + interval if interval else float("inf")
        tick_s, tick_bytes, error = 0.0, 0, None
        seen = protocol.EndTracker()
        view = memoryview(bytearray(RECV_BUFFER_BYTES))
        recv_into, now = sock.recv_into, time.monotonic
        rows = HeldRows(interval, lambda start_s, end_s, nbytes: self._interval(
            conn, start_s, end_s, nbytes))
        try:
            sock.settimeout(IDLE_TIMEOUT_S)
            while True:
                n = recv_into(view)
                if not n:
                    break
                seen.add(view[:n])
                if interval and now() >= next_tick:
                    elapsed, data = now() - started, seen.data_bytes
                    sock.sendall(protocol.encode_record(protocol.MAGIC_PROG, elapsed, data))
                    rows.add(tick_s, elapsed, data - tick_bytes)
                    tick_s, tick_bytes = elapsed, data
                    next_tick = started + (int(elapsed / interval) + 1) * interval
        except socket.timeout:
            error = f"no data for {IDLE_TIMEOUT_S:g} s"
        except OSError as err:
            error = f"connection lost: {err.strerror or err}"
        duration = time.monotonic() - started
        if interval:
            rows.close(tick_s, duration, seen.data_bytes - tick_bytes)
        if error is None and (seen.ended or not self.stop.is_set):
            try:
                sock.sendall(protocol.encode_record(protocol.MAGIC_ACK, duration,
                                                    seen.data_bytes))
            except OSError as err:
                error = f"could not send the ACK: {err.strerror or err}"
        self._conn_end(conn, seen.data_bytes, duration, self._cut_short(seen, error))

    def _cut_short(self, seen: protocol.EndTracker, error: Optional[str]) -> Optional[str]:
        """Why a transfer did not end as planned, or None when it did (a stop resets the
        connections still receiving: that reset is the stop, not a network fault)."""
        if seen.ended and error is None:
            return None
        if self.stop.is_set and not seen.ended:
            return "the server was stopped during the transfer"
        if error is not None:
            return error
        return ("the data ended without the client's END record (the client was "
                "stopped or killed, or its connection broke)")

    def _conn_end(self, conn: _Conn, total: int, duration: float,
                  error: Optional[str]) -> None:
        """Report one connection: ``error`` says why it was cut short, None if complete."""
        record: Record = {"type": "server_conn_end", "session": conn.session,
                          "conn": conn.hello.conn, "peer": conn.peer, "bytes": total,
                          "duration_s": seconds(duration), "rate_mbps": mbps(total, duration),
                          "interrupted": error is not None, "error": error}
        with self._lock:
            totals = self._totals
            totals.connections += 1
            totals.nbytes += total
            totals.interrupted += error is not None
            session = totals.sessions[conn.session]
            session.ended += 1
            session.nbytes += total
            session.duration_s = max(session.duration_s, duration)
            done = session.ended == session.parallel
        self.reporter.emit(record)
        if done:
            self.reporter.emit({"type": "server_session_end", "session": conn.session,
                                "peer": session.peer_host, "connections": session.parallel,
                                "bytes": session.nbytes,
                                "duration_s": seconds(session.duration_s),
                                "rate_mbps": mbps(session.nbytes, session.duration_s)})
