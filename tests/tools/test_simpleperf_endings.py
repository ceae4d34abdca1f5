"""How a simpleperf transfer ends, with real processes on loopback: only a transfer whose
data ended with the client's END record is complete; a killed or stopped client, a killed
or stopped server, a reset connection or a wrong ACK is reported interrupted on both sides.

A killed process's connections are closed by the kernel with a FIN, like a finished
transfer's: before protocol 2 the server logged a client SIGKILLed after 0.5 s as a finished
session ("interrupted": false, 1.41 GB in 0.46 s).
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import threading
import time
from typing import Callable, Iterator, List

import pytest
from simpleperf_procs import ROOT, TOOL, ServerProcess, free_port, of_type, records, serve

from labtools.tools.simpleperf import protocol

END_MISSING = "the data ended without the client's END record"


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    yield from serve()


def start_client(port: int, *args: str) -> "subprocess.Popen[str]":
    return subprocess.Popen(TOOL + ["-c", "-I", "127.0.0.1", "-p", str(port), *args, "--json"],
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def session_of(out: str) -> str:
    return of_type(records(out), "start")[0]["session"]


@pytest.mark.parametrize("args", [("-t", "2"), ("-n", "20MB", "-P", "3")])
def test_a_finished_run_is_complete_on_both_sides(server: ServerProcess, args) -> None:
    proc = start_client(server.port, *args)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    end = of_type(records(out), "end")[0]
    assert end["interrupted"] is False and end["exact"] is True and end["error"] is None
    for _ in range(end["connections"]):
        conn_end = server.wait_for("server_conn_end", session_of(out))
        assert conn_end["interrupted"] is False and conn_end["error"] is None


@pytest.mark.parametrize("args", [("-t", "10"), ("-n", "100000MB"),
                                  ("-t", "10", "-P", "3", "-i", "0.2")])
def test_a_client_killed_after_half_a_second_is_interrupted_on_the_server(
        server: ServerProcess, args) -> None:
    proc = start_client(server.port, *args)
    connections = int(args[args.index("-P") + 1]) if "-P" in args else 1
    for _ in range(connections):
        server.wait_for("server_conn_start")
    time.sleep(0.5)
    proc.kill()
    out, _ = proc.communicate(timeout=10)
    ends = [server.wait_for("server_conn_end", session_of(out)) for _ in range(connections)]
    for conn_end in ends:
        assert conn_end["interrupted"] is True, conn_end
        # the kernel closes a killed process's connection with a FIN, or with a reset
        # when progress records were still unread in its receive buffer: both are right
        assert conn_end["error"].startswith((END_MISSING, "connection lost: ")), conn_end
        assert conn_end["bytes"] > 0 and conn_end["duration_s"] < 5
    rows = [r for r in server.seen if r["type"] == "server_interval"]
    assert all(r["bytes"] >= 0 for r in rows)


def test_ctrl_c_on_the_client_is_interrupted_on_both_sides(server: ServerProcess) -> None:
    proc = start_client(server.port, "-t", "30")
    server.wait_for("server_conn_start")
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    end = of_type(records(out), "end")[0]
    assert end["interrupted"] is True
    assert end["exact"] is True and end["server_bytes"] == end["bytes_sent"] > 0  # ACK came
    conn_end = server.wait_for("server_conn_end", session_of(out))
    assert conn_end["interrupted"] is True and conn_end["error"].startswith(END_MISSING)
    assert conn_end["bytes"] == end["server_bytes"]


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_server_gone_mid_run_makes_the_client_report_interrupted(signum: int) -> None:
    srv = ServerProcess(free_port())
    try:
        proc = start_client(srv.port, "-t", "30", "-i", "0.5")
        srv.wait_for("server_conn_start")
        time.sleep(0.5)
        srv.proc.send_signal(signum)
        out, err = proc.communicate(timeout=45)
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
        srv.proc.wait(timeout=10)
    assert proc.returncode == 1
    assert err.count("\n") == 1 and err.startswith("simpleperf: error: connection 1:")
    end = of_type(records(out), "end")[0]
    assert end["interrupted"] is True and end["server_bytes"] is None
    assert end["error"] is not None and of_type(records(out), "error")


def _raw_session(port: int, payload: bytes, close: Callable[[socket.socket], None]) -> int:
    """A hand-made client: HELLO, WELCOME, ``payload``, then ``close``; its local port."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(protocol.Hello(1, 1, 0, os.urandom(16)).encode())
    assert protocol.recv_exact(sock, protocol.WELCOME.size)[:4] == b"SPOK"
    local = sock.getsockname()[1]
    sock.sendall(payload)
    close(sock)
    return local


def _half_close_and_read_ack(sock: socket.socket) -> None:
    sock.shutdown(socket.SHUT_WR)
    reader = protocol.RecordReader([])
    while reader.ack is None:
        data = sock.recv(64)
        if not data:
            break
        reader.feed(data)
    sock.close()
    assert reader.ack is not None


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.mark.parametrize("payload, close, complete", [
    (bytes(1000) + protocol.encode_end(1000), _half_close_and_read_ack, True),
    (b"SPND" * 250 + protocol.encode_end(1000), _half_close_and_read_ack, True),
    (bytes(1000), _half_close_and_read_ack, False),  # no END
    (b"", _half_close_and_read_ack, False),
    (bytes(1000) + protocol.encode_end(999), _half_close_and_read_ack, False),  # wrong count
    (bytes(10) + protocol.encode_end(10) + bytes(10), _half_close_and_read_ack, False),
    (bytes(2_000_000), _reset, False),
], ids=["end", "end-with-magic-in-data", "no-end", "nothing", "wrong-count", "data-after-end",
        "reset"])
def test_only_a_valid_end_record_makes_a_transfer_complete(
        server: ServerProcess, payload: bytes, close, complete: bool) -> None:
    """What a student's client must do, byte for byte: DATA, then END with its count."""
    local = _raw_session(server.port, payload, close)
    conn_end = server.wait_for("server_conn_end")
    assert conn_end["peer"].endswith(f":{local}")
    assert conn_end["interrupted"] is not complete, conn_end
    if complete:
        assert conn_end["bytes"] == 1000 and conn_end["error"] is None
    else:
        assert conn_end["error"]


def test_progress_and_ack_never_count_the_end_record(server: ServerProcess) -> None:
    """The server's interval rows and ACK count DATA only, however the END arrives."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(protocol.Hello(1, 1, 100, os.urandom(16)).encode())  # 0.1 s intervals
    protocol.recv_exact(sock, protocol.WELCOME.size)
    sock.sendall(bytes(5000))
    time.sleep(0.15)  # past the first tick: the END's arrival sends a progress record
    sock.sendall(protocol.encode_end(5000))
    time.sleep(0.1)
    _half_close_and_read_ack(sock)
    conn_end = server.wait_for("server_conn_end")
    rows = [r for r in server.seen if r["type"] == "server_interval"]
    assert rows and rows[0]["bytes"] == 5000
    assert conn_end["bytes"] == 5000 and sum(r["bytes"] for r in rows) == 5000


def test_stopping_a_server_with_idle_peers_takes_no_time(server: ServerProcess) -> None:
    """Peers that connect and never say HELLO held the stop for 10 s (the HELLO time-out)."""
    idle: List[socket.socket] = [socket.create_connection(("127.0.0.1", server.port))
                                 for _ in range(10)]
    time.sleep(0.3)
    started = time.monotonic()
    assert server.stop() == 130
    assert time.monotonic() - started < 3
    for sock in idle:
        sock.close()


def _fake_server(behaviour: Callable[[socket.socket], None]) -> int:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve_one() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                protocol.recv_exact(conn, protocol.HELLO.size)
                conn.sendall(protocol.encode_welcome(True))
                behaviour(conn)

    threading.Thread(target=serve_one, daemon=True).start()
    return listener.getsockname()[1]


def _read_to_fin(conn: socket.socket) -> int:
    total = 0
    while True:
        data = conn.recv(1 << 20)
        if not data:
            return total
        total += len(data)


def _ack_too_much(conn: socket.socket) -> None:
    conn.sendall(protocol.encode_record(protocol.MAGIC_ACK, 1.0, _read_to_fin(conn) + 1000))


def _ack_at_once(conn: socket.socket) -> None:
    conn.sendall(protocol.encode_record(protocol.MAGIC_ACK, 0.1, 5))
    _read_to_fin(conn)


def _progress_backwards(conn: socket.socket) -> None:
    conn.sendall(protocol.encode_record(protocol.MAGIC_PROG, 0.5, 2000) +
                 protocol.encode_record(protocol.MAGIC_PROG, 0.6, 1000))
    total = _read_to_fin(conn) - protocol.END.size
    conn.sendall(protocol.encode_record(protocol.MAGIC_ACK, 1.0, total))


@pytest.mark.parametrize("behaviour, reason", [
    (_ack_too_much, "the server counted"),
    (_ack_at_once, "the server counted 5 bytes"),
    (_progress_backwards, "malformed"),
])
def test_a_server_that_miscounts_makes_the_run_interrupted(behaviour, reason: str) -> None:
    proc = start_client(_fake_server(behaviour), "-n", "3MB")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert reason in err and err.count("\n") == 1
    end = of_type(records(out), "end")[0]
    assert end["interrupted"] is True and end["error"]
